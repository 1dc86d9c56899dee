// Package parser turns SQL text (a job file or a shell buffer) into
// statements.
//
// It owns:
//   - splitting a script into statements (ParseScript, Complete), with
//     statement-set blocks (EXECUTE STATEMENT SET BEGIN ... END and
//     BEGIN STATEMENT SET; ... END;);
//   - the non-query statements (CREATE TABLE, SET, SHOW ..., STOP JOB ...,
//     CREATE SAVEPOINT, DESCRIBE JOB ...),
//     parsed by a small recursive-descent parser over the pre-lexer's tokens;
//   - a pre-lexer that rewrites the Flink syntax TiDB's MySQL grammar lacks
//     in queries and expressions, then the unmodified TiDB parser (SQL mode
//     PIPES_AS_CONCAT and NO_BACKSLASH_ESCAPES, so '||' concatenates and a
//     backslash in a string is an ordinary character, as in Flink). An offset
//     map from the rewritten text back to the original maps TiDB's errors.
//
// Rewrites done by the pre-lexer (QueryContext and helpers recover them):
//   - CAST(x AS <flink type>) -> CAST(x AS CHAR(900000000+i));
//     QueryContext.CastType returns the type as written.
//   - INTERVAL '5' SECOND[S] (MINUTE, HOUR, DAY, MONTH, YEAR and the "X TO Y"
//     forms) -> __ssql_interval('5000', 'SECOND'); IntervalOf decodes it.
//     Before PRECEDING/FOLLOWING (window frames) it stays in TiDB's form
//     INTERVAL '5' SECOND; FrameInterval decodes it.
//   - , LATERAL TABLE(F(a)) [AS] T(c) and [CROSS|LEFT] JOIN LATERAL TABLE(..),
//     [CROSS] JOIN UNNEST(e) [AS] T(c), FROM TABLE(F(..)) (window TVFs)
//     -> a table named __ssql_tf_<i> [AS T]; QueryContext.TableFunc.
//   - FULL [OUTER] JOIN -> STRAIGHT_JOIN (IsFullOuterJoin).
//   - t FOR SYSTEM_TIME AS OF o.ts [AS] a -> t AS a AS OF TIMESTAMP o.ts.
//   - Words TiDB reserves but Flink does not (KEY, INDEX, DATABASE, READ,
//     WRITE, ...; see mysqlOnlyReserved) are backquoted unless '(' follows.
//     Function names that are TiDB keywords TiDB refuses as function names
//     (SPLIT(...), FIRST(...)) are backquoted. Words that both dialects
//     reserve (ORDER, GROUP, RANGE, ROWS, ROW, RANK, WINDOW, INTERVAL,
//     TABLE, VALUES, ...) must be backquoted by the user, as in Flink;
//     TIMESTAMP, USER, VALUE, COUNT, DATE, TIME, STATUS work unquoted.
//   - Comments are blanked (Flink's '--' needs no following space); /*+ */
//     hints are kept for TiDB, except that UID('name') inside one (an
//     operator id hint, allowed only right after SELECT) becomes
//     QB_NAME(__ssql_uid_<i>), which TiDB keeps on its SelectStmt;
//     QueryContext.UIDHint (see hint.go).
//
// Not supported (clear syntax errors): IS [NOT] DISTINCT FROM, NULLS
// FIRST/LAST, aggregate FILTER (WHERE ..), named arguments (=>), ARRAY[..] /
// MAP[..] constructors and nested types, MATCH_RECOGNIZE, GROUPING SETS.
//
// Invariants: every error is an *Error at a position of the caller's
// original text (the whole script); nothing panics (ParseScript and every
// TiDB call run under recover). Generated names start with "__ssql_"; user
// identifiers must not.
//
// It must not import any other streamsql package, validate type names
// (catalog.ParseTypeName does), or resolve tables and columns.
package parser
