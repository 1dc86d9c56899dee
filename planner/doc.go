// Package planner turns parsed queries into physical DAGs.
//
// It builds a logical chain (scan, calc, table function, aggregation) from
// the TiDB AST given by package parser, resolves names and types (Flink's
// typing rules, see functions.go), and cuts the chain into tasks: stateless
// operators are fused into the task of their input; a keyed aggregation
// starts a new task behind a hash exchange on its keys. Every edge records
// its changelog mode (insert-only or retract) so that sinks that cannot
// consume updates are rejected at planning time, naming the operator that
// makes the stream updating. Explain renders the DAG.
//
// Errors are *parser.Error at the construct: the expression, operator or
// table reference TiDB's nodes and the pre-lexer's TableRefs locate.
// ValidateTable (tableopts.go) checks a table's connector options, for
// CREATE TABLE and for /*+ OPTIONS(...) */ hints, which are merged over the
// table's options for one statement.
//
// The planner is pure and deterministic: the same SQL and catalog give the
// same plan and the same operator ids. Ids of operators that own state
// (aggregations, sources, sinks) derive only from what defines that state,
// or from a /*+ UID('name') */ hint (ids.go), so they survive compatible
// changes of the query; OperatorsMeta and CheckUpgrade (upgrade.go) record
// them in savepoints and check a changed job against one. It never imports
// exec.
package planner
