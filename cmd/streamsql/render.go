package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/streamsql/streamsql/session"
)

// nullText is how tableau mode shows SQL NULL (as Flink's SQL client does).
const nullText = "<NULL>"

// Column widths of tableau mode. Rows stream, so widths are fixed when the
// header is printed: from the column name and the first batch of values,
// at least minStreamWidth and at most maxStreamWidth (Flink's
// sql-client.display.max-column-width default) unless the name is longer.
const (
	minStreamWidth = 10
	maxStreamWidth = 30
)

// displayWidth is the number of terminal cells s takes, counting one per
// rune (wide East Asian characters are not special-cased).
func displayWidth(s string) int { return utf8.RuneCountInString(s) }

// cleanCell makes a value printable on one line: control characters
// (newlines, tabs) become spaces.
func cleanCell(s string) string {
	if strings.IndexFunc(s, unicode.IsControl) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// truncateCell cuts s to width cells, ending in "..." when it was cut.
func truncateCell(s string, width int) string {
	if displayWidth(s) <= width {
		return s
	}
	if width <= 3 {
		return strings.Repeat(".", width)
	}
	n := 0
	for i := range s {
		if n == width-3 {
			return s[:i] + "..."
		}
		n++
	}
	return s
}

// writeBorder writes "+----+-----+\n" for the given column widths.
func writeBorder(b *bytes.Buffer, widths []int) {
	for _, w := range widths {
		b.WriteByte('+')
		for i := 0; i < w+2; i++ {
			b.WriteByte('-')
		}
	}
	b.WriteString("+\n")
}

// writeCell writes "| value " with value right-aligned in width cells, as
// Flink's SQL client aligns its tables.
func writeCell(b *bytes.Buffer, s string, width int) {
	b.WriteString("| ")
	for i := displayWidth(s); i < width; i++ {
		b.WriteByte(' ')
	}
	b.WriteString(s)
	b.WriteByte(' ')
}

// plural renders "1 row" / "2 rows".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// writeBoxTable renders a complete (small) result as a boxed table followed
// by "N rows in set", or "Empty set" when there are no rows. Columns are as
// wide as their widest cell; nothing is truncated.
func writeBoxTable(w io.Writer, cols []string, rows [][]string) error {
	if len(rows) == 0 {
		_, err := io.WriteString(w, "Empty set\n")
		return err
	}
	widths := make([]int, len(cols))
	header := make([]string, len(cols))
	for i, c := range cols {
		header[i] = cleanCell(c)
		widths[i] = displayWidth(header[i])
	}
	cells := make([][]string, len(rows))
	for r, row := range rows {
		cells[r] = make([]string, len(cols))
		for i := range cols {
			if i < len(row) {
				cells[r][i] = cleanCell(row[i])
			}
			widths[i] = max(widths[i], displayWidth(cells[r][i]))
		}
	}
	var b bytes.Buffer
	writeBorder(&b, widths)
	for i, h := range header {
		writeCell(&b, h, widths[i])
	}
	b.WriteString("|\n")
	writeBorder(&b, widths)
	for _, row := range cells {
		for i, c := range row {
			writeCell(&b, c, widths[i])
		}
		b.WriteString("|\n")
	}
	writeBorder(&b, widths)
	b.WriteString(plural(len(rows), "row") + " in set\n")
	_, err := w.Write(b.Bytes())
	return err
}

// tableau prints a SELECT's changelog as it arrives, in Flink's "tableau"
// result mode: a header with an "op" column, then one line per change. The
// header is printed with the first batch (or at the end when there is none),
// so that the first values can inform the column widths.
type tableau struct {
	w       io.Writer
	cols    []string
	widths  []int // widths[0] is the op column
	started bool
	rows    int
	buf     bytes.Buffer
}

func newTableau(w io.Writer, cols []string) *tableau {
	return &tableau{w: w, cols: cols}
}

// start fixes the widths from the names and the first batch and prints the
// header.
func (t *tableau) start(first []session.Change) {
	t.started = true
	t.widths = make([]int, len(t.cols)+1)
	t.widths[0] = 2 // "op", "+I"
	for i, c := range t.cols {
		longest := 0
		for _, ch := range first {
			if i < len(ch.Values) {
				v := nullText
				if p := ch.Values[i]; p != nil {
					v = *p
				}
				longest = max(longest, displayWidth(v))
			}
		}
		t.widths[i+1] = max(displayWidth(c), min(maxStreamWidth, max(minStreamWidth, longest)))
	}
	writeBorder(&t.buf, t.widths)
	writeCell(&t.buf, "op", t.widths[0])
	for i, c := range t.cols {
		writeCell(&t.buf, cleanCell(c), t.widths[i+1])
	}
	t.buf.WriteString("|\n")
	writeBorder(&t.buf, t.widths)
}

// write prints one batch of changes and flushes them to the writer.
func (t *tableau) write(changes []session.Change) error {
	if len(changes) == 0 {
		return nil
	}
	if !t.started {
		t.start(changes)
	}
	for _, ch := range changes {
		writeCell(&t.buf, truncateCell(ch.Op, t.widths[0]), t.widths[0])
		for i := range t.cols {
			v := nullText
			if i < len(ch.Values) && ch.Values[i] != nil {
				v = cleanCell(*ch.Values[i])
			}
			writeCell(&t.buf, truncateCell(v, t.widths[i+1]), t.widths[i+1])
		}
		t.buf.WriteString("|\n")
	}
	t.rows += len(changes)
	return t.flush()
}

// finish closes the table and prints the row count: "Received a total of N
// rows", or when the user cancelled the query "Query terminated, received a
// total of N rows".
func (t *tableau) finish(terminated bool) error {
	if !t.started {
		t.start(nil)
	}
	writeBorder(&t.buf, t.widths)
	if terminated {
		t.buf.WriteString("Query terminated, received a total of " + plural(t.rows, "row") + "\n")
	} else {
		t.buf.WriteString("Received a total of " + plural(t.rows, "row") + "\n")
	}
	return t.flush()
}

func (t *tableau) flush() error {
	_, err := t.w.Write(t.buf.Bytes())
	t.buf.Reset()
	return err
}
