package parser

import (
	"fmt"
	"strings"
)

// ParseScript parses a whole script (a job file or a shell buffer) into its
// statements. Statements end at ';' outside string literals, quoted
// identifiers, comments and statement-set blocks; a final statement may omit
// the ';'. Statements that hold only whitespace and comments are skipped.
// Every error is an *Error positioned in text.
func ParseScript(text string) (stmts []Statement, err error) { return ParseScriptAt(text, 1) }

// ParseScriptAt is ParseScript for a text that starts at line firstLine of a
// larger input (a shell reads its input one buffer at a time): every
// position's Line counts from firstLine; offsets stay offsets into text.
func ParseScriptAt(text string, firstLine int) (stmts []Statement, err error) {
	defer func() {
		if r := recover(); r != nil {
			stmts = nil
			err = &Error{Pos: Pos{Offset: 0, Line: max(firstLine, 1), Col: 1},
				Msg: fmt.Sprintf("internal parser error (please report): %v", r)}
		}
	}()
	src, code, perr := prepare(text, firstLine)
	if perr != nil {
		return nil, perr
	}
	spans, perr := split(src, code)
	if perr != nil {
		return nil, perr
	}
	for _, sp := range spans {
		st, perr := parseStatement(src, code[sp.from:sp.to], sp.end)
		if perr != nil {
			return nil, perr
		}
		stmts = append(stmts, st)
	}
	return stmts, nil
}

// Parse parses exactly one statement (an optional trailing ';' is allowed).
func Parse(text string) (Statement, error) {
	stmts, err := ParseScript(text)
	if err != nil {
		return nil, err
	}
	switch len(stmts) {
	case 0:
		return nil, &Error{Pos: Pos{Offset: 0, Line: 1, Col: 1}, Msg: "empty statement"}
	case 1:
		return stmts[0], nil
	}
	return nil, &Error{Pos: stmts[1].Position(), Msg: "expected one statement, found another one here"}
}

// Complete reports whether a shell's multi-line buffer is ready to submit: it
// ends with a ';' that terminates a statement (outside quotes, comments and
// statement-set blocks), or it is a bare shell verb (quit, exit, help).
func Complete(text string) bool {
	switch strings.ToLower(strings.TrimSpace(text)) {
	case "quit", "exit", "help":
		return true
	}
	src, code, err := prepare(text, 1)
	if err != nil || len(code) == 0 {
		return false
	}
	last := code[len(code)-1]
	if last.kind != tOp || src.tokText(last) != ";" {
		return false
	}
	_, err = split(src, code)
	return err == nil
}

// prepare lexes text (whose first line is line firstLine of the input) and
// returns its code tokens (no comments or hints).
func prepare(text string, firstLine int) (*source, []token, *Error) {
	lines := newLineIndexAt(text, firstLine)
	toks, err := lexAll(text, lines)
	if err != nil {
		return nil, nil, err
	}
	src := &source{text: text, lines: lines, toks: toks}
	code := make([]token, 0, len(toks))
	for _, t := range toks {
		if t.kind != tComment && t.kind != tHint {
			code = append(code, t)
		}
	}
	return src, code, nil
}

// span is one statement: code tokens [from, to) (without the ';'); end is
// the offset of its ';' or the end of the text.
type span struct{ from, to, end int }

// split cuts the code tokens into statements. Inside
// `EXECUTE STATEMENT SET BEGIN ... END` and `BEGIN STATEMENT SET; ... END`
// a ';' does not end the statement; CASE ... END pairs are counted so that a
// CASE inside the block does not close it.
func split(src *source, code []token) ([]span, *Error) {
	var out []span
	start := 0
	inBlock, blockTok, caseDepth := false, 0, 0
	isWord := func(i int, w string) bool { return i < len(code) && src.word(code[i]) == w }
	for i := 0; i < len(code); {
		t := code[i]
		w := src.word(t)
		if inBlock {
			switch w {
			case "CASE":
				caseDepth++
			case "END":
				if caseDepth > 0 {
					caseDepth--
				} else {
					inBlock = false
				}
			}
			i++
			continue
		}
		if t.kind == tOp && src.tokText(t) == ";" {
			if i > start {
				out = append(out, span{from: start, to: i, end: t.start})
			}
			start = i + 1
			i++
			continue
		}
		if w == "BEGIN" && i == start && isWord(i+1, "STATEMENT") && isWord(i+2, "SET") {
			inBlock, blockTok, caseDepth = true, i, 0
			i += 3
			if i < len(code) && code[i].kind == tOp && src.tokText(code[i]) == ";" {
				i++
			}
			continue
		}
		if w == "EXECUTE" && isWord(i+1, "STATEMENT") && isWord(i+2, "SET") && isWord(i+3, "BEGIN") {
			inBlock, blockTok, caseDepth = true, i, 0
			i += 4
			continue
		}
		i++
	}
	if inBlock {
		return nil, &Error{Pos: src.pos(code[blockTok].start), Msg: "statement set is not closed: missing END"}
	}
	if start < len(code) {
		out = append(out, span{from: start, to: len(code), end: len(src.text)})
	}
	return out, nil
}

// Keywords lists the keywords offered by the shell's tab completion.
var Keywords = []string{
	"ALL", "AND", "AS", "ASC", "AVG", "BEGIN", "BETWEEN", "BIGINT", "BOOLEAN", "BY", "CASE", "CAST",
	"CHAR_LENGTH", "CHECKPOINTS", "COALESCE", "COMMENT", "CONCAT", "COUNT", "CREATE", "CROSS", "CUMULATE",
	"CURRENT_TIMESTAMP", "DAY", "DECIMAL", "DESC", "DESCRIBE", "DESCRIPTOR", "DISTINCT", "DOUBLE",
	"DRAIN", "DROP", "ELSE", "END", "ENFORCED", "EXECUTE", "EXISTS", "EXIT", "EXPLAIN", "FALSE",
	"FOLLOWING", "FOR", "FROM", "FULL", "FUNCTIONS", "GROUP", "HAVING", "HELP", "HOP", "HOUR", "IF",
	"IN", "INNER", "INSERT", "INT", "INTERVAL", "INTO", "IS", "JOB", "JOBS", "JOIN", "KEY", "LATERAL",
	"LEFT", "LIKE", "LIMIT", "MAX", "METADATA", "MIN", "MINUTE", "MONTH", "NOT", "NULL", "ON", "OR",
	"ORDER", "OUTER", "OVER", "PARTITION", "PLAN", "PRECEDING", "PRIMARY", "PROCTIME", "QUIT", "RANGE",
	"RESET", "RIGHT", "ROW", "ROWS", "ROW_NUMBER", "SAVEPOINT", "SAVEPOINTS", "SECOND", "SELECT", "SET", "SHOW",
	"STATEMENT", "STOP", "STRING", "SUBSTRING", "SUM", "TABLE", "TABLES", "TEMPORARY", "THEN",
	"TIMESTAMP", "TRUE", "TUMBLE", "UNION", "UNNEST", "UPGRADE", "VARCHAR", "VIEW", "VIEWS", "VIRTUAL", "WATERMARK",
	"WHEN", "WHERE", "WITH", "YEAR",
}
