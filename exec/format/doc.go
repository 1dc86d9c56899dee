// Package format owns the text record formats of streamsql's connectors and
// the text form of SQL values.
//
//   - CSV and JSON decoders append one record (a line) at a time into the typed
//     builders of an array.RecordBuilder. A record is appended only if every
//     field parses: fields are parsed into per-column scratch slots first and
//     copied into the builders afterwards, so a bad record leaves no partial
//     row behind. Errors are *FieldError values (column, value, reason); the
//     caller adds the place (file, line, byte offset).
//   - CSV and JSON encoders append rows of a record to a byte buffer or a
//     bufio.Writer, reading typed column views (Column): no boxing per value.
//   - FormatValue and Column.Append render values as Flink prints them
//     (Java's Double.toString for DOUBLE, the exact scale for DECIMAL, ...).
//   - It is the one home of value text: the parsers in parse.go serve both
//     the decoders (strict rules; ParseTimestamp for CSV and JSON) and
//     CAST(STRING AS T) in exec/expr (Cast* in cast.go, Flink's lenient
//     rules); AppendJavaDouble, AppendDecimal and AppendTimestamp serve the
//     encoders, the SQL client and CAST(x AS STRING).
//
// Invariants: decoders never retain the input line after Decode returns;
// builders are owned by the caller (the decoder only appends).
//
// This package must not import exec or exec/expr (both sit above it) and
// does no I/O of its own beyond writing to the writer it is given.
package format
