// Package expr compiles resolved scalar expressions (planner.Expr) into
// vectorised evaluators over Arrow record batches, and provides the typed
// row-selection kernels FilterRecord and TakeRecord.
//
// What it owns: the run-time semantics of every built-in scalar function the
// planner can resolve (planner/functions.go decides types and inserts casts;
// this package trusts those types) and row gathering for every SQL column
// type. The text of values (CAST to and from STRING) comes from exec/format,
// the one home of value text encoding and decoding.
//
// Invariants:
//   - Type dispatch happens once, in Compile. Eval runs typed loops over whole
//     columns (generics over int32/int64/float64, decimal128.Num, strings and
//     bitmaps); there is no per-row interface call, boxing or allocation on
//     the common paths (DECIMAL division and rescaling of values beyond 18
//     digits fall back to math/big).
//   - Eval returns a NEW array of e.Type().ArrowType() with rec.NumRows() rows
//     that the caller must Release. A column reference returns the input
//     column with one extra reference (no copy). Kernels never Release
//     anything they did not create; every temporary is released before Eval
//     returns, on error paths too.
//   - Constant sub-expressions are evaluated once at compile time (if that
//     fails, e.g. CAST('x' AS INT), the error is reported when a batch is
//     evaluated instead) and broadcast per batch; binary kernels have
//     column-scalar variants so constants are never materialised for them.
//   - Evaluators keep no per-batch state: one Evaluator may be used by
//     several goroutines at once.
//   - Expressions that can fail at run time (integer division, modulo, CAST
//     from STRING) are only evaluated on the rows that need them inside CASE,
//     COALESCE, AND and OR, so guards such as
//     CASE WHEN b <> 0 THEN a / b END never raise spurious errors.
//
// Semantics (Flink's unless said otherwise): SQL three-valued logic; integer
// overflow wraps as in Java; integer division or modulo by zero fails with
// "division by zero" (also for DECIMAL); DOUBLE follows IEEE-754; a DECIMAL
// result that does not fit its precision is NULL; ROUND is half-up (for DOUBLE
// on the shortest decimal representation, like Java's BigDecimal.valueOf);
// DOUBLE to INT/BIGINT truncates toward zero and saturates (NaN is 0);
// BIGINT to INT and DECIMAL to integers wrap; CAST of a malformed string
// fails the job, TRY_CAST gives NULL.
//
// What it must not do: import exec (exec imports this package), keep
// references to input batches after Eval returns, or panic on user data.
package expr
