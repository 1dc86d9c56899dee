// Package parser turns SQL text (a job file or a shell buffer) into
// statements.
//
// It owns:
//   - splitting a script into statements (ParseScript, Complete), with
//     statement-set blocks (EXECUTE STATEMENT SET BEGIN ... END);
//   - the non-query statements (CREATE TABLE, SET, SHOW ..., STOP JOB ...),
//     parsed by a small recursive-descent parser over the pre-lexer's tokens;
//   - a pre-lexer that rewrites the Flink syntax TiDB's MySQL grammar lacks
//     in queries and expressions, then the unmodified TiDB parser (SQL mode
//     PIPES_AS_CONCAT and NO_BACKSLASH_ESCAPES, so '||' concatenates and a
//     backslash in a string is an ordinary character, as in Flink).
//
// Rewrites done by the pre-lexer (QueryContext recovers what was replaced):
//   - CAST(x AS <flink type>) -> CAST(x AS CHAR(900000000+i)); CastType
//     returns the type as written.
//   - INTERVAL '5' SECOND[S] (also MINUTE, HOUR, DAY, MONTH, YEAR and the
//     "X TO Y" forms) -> __ssql_interval('5000', 'SECOND'); IntervalOf
//     decodes it. Before PRECEDING/FOLLOWING (window frames) it stays
//     INTERVAL '5' SECOND for TiDB's grammar; FrameInterval decodes it.
//   - , LATERAL TABLE(F(a)) [AS] T(c), [CROSS|LEFT] JOIN LATERAL TABLE(..),
//     [CROSS] JOIN UNNEST(e) [AS] T(c) and FROM TABLE(F(..)) -> a table
//     named __ssql_tf_<i> [AS T]; TableFunc returns the call.
//   - Words TiDB reserves but Flink does not (KEY, INDEX, DATABASE, READ,
//     WRITE, STATUS-like nouns; see mysqlOnlyReserved) are backquoted unless
//     a '(' follows. Words both reserve (e.g. TIMESTAMP is fine, but ORDER,
//     GROUP, RANGE, ROWS, ROW, RANK, WINDOW, INTERVAL, TABLE, VALUES, USER
//     in some places) must be backquoted by the user, as in Flink.
//   - Comments are blanked (Flink's '--' needs no following space); /*+ */
//     hints are kept.
//
// Invariants: every error is an *Error at a position of the caller's
// original text (the whole script); nothing panics (TiDB is called under
// recover). Generated names start with "__ssql_"; user identifiers must not.
//
// It must not import any other streamsql package, validate type names
// (catalog.ParseTypeName does), or resolve tables and columns.
package parser
