package parser

// windowTVFArgs rewrites, between the parentheses at code indexes open and
// close of a table function's arguments, what TiDB's grammar lacks:
//
//	TABLE t                      -> t (a column name naming the table)
//	TABLE t PARTITION BY k       -> t, and tf.PartitionBy = [k]
//	TABLE t PARTITION BY (k, j)  -> t, and tf.PartitionBy = [k j]
//	NAME => arg                  -> arg, and tf.ArgNames[i] = NAME
func (r *rewriter) windowTVFArgs(tf *TableFunc, open, close int) *Error {
	arg := 0
	atStart := true
	for i := open + 1; i < close; i++ {
		if r.isOp(i, "(") {
			if m := r.matchParen(i); m > i {
				i = m
			}
			atStart = false
			continue
		}
		if r.isOp(i, ",") {
			arg++
			atStart = true
			continue
		}
		if atStart {
			atStart = false
			if name, ok := r.src.ident(r.codeTok(i)); ok && r.isOp(i+1, "=>") {
				for len(tf.ArgNames) <= arg {
					tf.ArgNames = append(tf.ArgNames, "")
				}
				tf.ArgNames[arg] = name
				r.replace(i, i+1, "")
				i++
				atStart = true // the argument follows
				continue
			}
		}
		if r.word(i) != "TABLE" {
			continue
		}
		if _, ok := r.src.ident(r.codeTok(i + 1)); !ok || r.isOp(i+2, "(") || r.isOp(i+2, ".") {
			continue
		}
		r.replace(i, i, "")
		if r.word(i+2) != "PARTITION" || r.word(i+3) != "BY" {
			continue
		}
		j := i + 4
		if r.isOp(j, "(") {
			m := r.matchParen(j)
			if m < 0 {
				return r.src.errAt(r.codeTok(j).start, "unclosed PARTITION BY column list")
			}
			cols, err := r.subCursor(j, m+1).identList("a column name")
			if err != nil {
				return err
			}
			tf.PartitionBy = cols
			r.replace(i+2, m, "")
			i = m
			continue
		}
		name, ok := r.src.ident(r.codeTok(j))
		if !ok {
			at := r.codeTok(j)
			return r.src.errAt(at.start, "expected a column after PARTITION BY, found %s", r.src.describe(at))
		}
		tf.PartitionBy = []string{name}
		r.replace(i+2, j, "")
		i = j
	}
	return nil
}
