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
//   - EXTRACT(unit FROM x) -> __ssql_extract('UNIT', x) (Flink's DOW, DOY,
//     EPOCH, ... that TiDB lacks); FLOOR(x TO unit) / CEIL(x TO unit) ->
//     __ssql_floor(x, 'UNIT') / __ssql_ceil(x, 'UNIT'); REGEXP(s, p) ->
//     `REGEXP`(s, p) (TiDB knows only the operator).
//   - agg(...) FILTER (WHERE cond): the clause is removed and cond parsed
//     on its own; QueryContext.AggFilter finds it from the aggregate node.
//   - Types (CREATE TABLE, CAST) include ROW<name type, ...> and
//     ROW(name type, ...), nested; a closing '>>' is split.
//   - t FOR SYSTEM_TIME AS OF o.ts [AS] a -> t AS a AS OF TIMESTAMP o.ts.
//   - Every table name of a FROM clause (after a SELECT's FROM, a JOIN or a
//     ',' of the FROM list), possibly qualified c.db.t -> `__ssql_ref_<i>`.`t`;
//     QueryContext.TableRef gives its position, qualifiers, the position of
//     its join and its OPTIONS hint (tableref.go).
//   - a IS [NOT] DISTINCT FROM b -> a <=> b; QueryContext.NullSafeEqual
//     tells the two apart (and from a <=> written by the user).
//   - Words TiDB reserves but Flink does not (KEY, INDEX, DATABASE, READ,
//     WRITE, ...; see mysqlOnlyReserved) are backquoted unless '(' follows.
//     Function names that are TiDB keywords TiDB refuses as function names
//     (SPLIT(...), FIRST(...)) are backquoted. Words that both dialects
//     reserve (ORDER, GROUP, RANGE, ROWS, ROW, RANK, WINDOW, INTERVAL,
//     TABLE, VALUES, ...) must be backquoted by the user, as in Flink;
//     TIMESTAMP, USER, VALUE, COUNT, DATE, TIME, STATUS work unquoted.
//   - Comments are blanked (Flink's '--' needs no following space). /*+ */
//     hints are read here, never by TiDB (hint.go): UID('name') right after
//     SELECT becomes QB_NAME(__ssql_uid_<i>), which TiDB keeps on its
//     SelectStmt (QueryContext.UIDHint); OPTIONS('k' = 'v') right after a
//     table name goes to its TableRef (Insert.Options after INSERT INTO t)
//     and is blanked; any other hint, or a hint elsewhere, is an error
//     naming it.
//
// Positions: TiDB records where each expression starts in the text given
// to it; the pre-lexer maps these to the original text once per parse, so
// QueryContext.PosOf and TokenBefore place the planner's errors at the
// expression or operator. Columns count characters.
//
// Not supported, reported by name at their position (unsupported.go):
// VALUES as a query or in FROM, GROUPING SETS, SIMILAR TO, MATCH_RECOGNIZE, ARRAY[..] / MAP[..] constructors and element
// access, binary and hexadecimal literals, ESCAPE with more than one
// character, CREATE TABLE ... AS SELECT. Flink aggregates that TiDB knows
// only as window functions (FIRST_VALUE(x) without OVER) are passed as plain
// calls for the planner to name. Still plain syntax errors: NULLS
// FIRST/LAST, named arguments (=>), ARRAY<...> and MAP<...> types.
//
// Invariants: every error is an *Error at a position of the caller's
// original text (the whole script); nothing panics (ParseScript and every
// TiDB call run under recover). Generated names start with "__ssql_"; user
// identifiers must not.
//
// It must not import any other streamsql package, validate type names
// (catalog.ParseTypeName does), or resolve tables and columns.
package parser
