// Package catalog holds a session's tables and views, the SQL types and
// their Arrow storage, connector option schemas, and session options with
// Flink's keys. It is safe for concurrent use. It depends on nothing else of
// streamsql (views keep their parsed query as an opaque value).
package catalog
