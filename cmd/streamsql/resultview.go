package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/streamsql/streamsql/session"
)

// Result modes of a SELECT, Flink's sql-client.execution.result-mode:
//
//   - tableau (the default): every change is printed as it arrives, one
//     line with its op (+I, -U, +U, -D), and the output scrolls;
//   - table: the result is materialized (+I/+U add a row, -U/-D remove
//     one) and shown as a table. In the interactive shell the table is
//     redrawn in place as the changelog arrives (at most every
//     liveRefresh), showing the rows that fit the screen; elsewhere (a
//     piped shell, 'run') it is printed once, when the query ends. At most
//     sql-client.execution.max-table-result.rows rows are kept; beyond,
//     the oldest are dropped, as in Flink;
//   - changelog: in the interactive shell, the latest changes (with their
//     op) redrawn in place like the table view; elsewhere the same as
//     tableau.
const (
	modeTableau   = "tableau"
	modeTable     = "table"
	modeChangelog = "changelog"
)

// liveRefresh bounds how often a live view redraws.
const liveRefresh = 200 * time.Millisecond

// viewConfig says how a SELECT's result is shown.
type viewConfig struct {
	mode    string
	live    bool                       // redraw in place: an interactive terminal
	size    func() (width, height int) // the terminal's size (live views); 0 when unknown
	maxRows int                        // table mode: rows kept
}

// resultView reads the result mode and row limit of s's options.
func resultView(s *session.Session) viewConfig {
	return viewConfig{
		mode:    strings.ToLower(s.Options.Get("sql-client.execution.result-mode")),
		maxRows: s.Options.Int("sql-client.execution.max-table-result.rows"),
	}
}

// presentQuery shows a SELECT's result as vc says until the query ends,
// fails, or interrupt is closed (then it cancels the query). It reports
// whether the user terminated the query, and the query's failure.
func presentQuery(w io.Writer, cols []string, st *session.Stream, interrupt <-chan struct{}, vc viewConfig) (terminated bool, err error) {
	switch {
	case vc.mode == modeTable && vc.live:
		v := newLiveView(w, cols, vc, false)
		return v.run(st, interrupt)
	case vc.mode == modeTable:
		m := newMaterialized(vc.maxRows)
		terminated, err = consume(st, interrupt, nil, func(b []session.Change) error {
			for _, ch := range b {
				m.apply(ch)
			}
			return nil
		}, nil)
		if err != nil {
			return terminated, err
		}
		if werr := writeBoxTable(w, cols, m.cells(m.live)); werr != nil {
			return terminated, werr
		}
		if terminated {
			_, err = fmt.Fprintln(w, "Query terminated.")
		}
		return terminated, err
	case vc.mode == modeChangelog && vc.live:
		v := newLiveView(w, cols, vc, true)
		return v.run(st, interrupt)
	}
	return presentStream(w, cols, st, interrupt)
}

// consume reads st until it ends or interrupt is closed, handing every batch
// to onBatch and calling onTick at every tick (tick may be nil).
func consume(st *session.Stream, interrupt <-chan struct{}, tick <-chan time.Time, onBatch func([]session.Change) error, onTick func() error) (terminated bool, err error) {
	for {
		select {
		case batch, ok := <-st.Changes:
			if !ok {
				err := st.Err()
				if errors.Is(err, context.Canceled) {
					return true, nil
				}
				return false, err
			}
			if err := onBatch(batch); err != nil {
				cancelStream(st)
				return false, err
			}
		case <-tick:
			if err := onTick(); err != nil {
				cancelStream(st)
				return false, err
			}
		case <-interrupt:
			cancelStream(st)
			return true, nil
		}
	}
}

// materialized is the table a changelog folds into, rows in arrival order.
// A -U frees its row's place and the +U that follows takes it, so that an
// updated row stays where it was.
type materialized struct {
	rows    [][]*string      // nil: a removed row
	index   map[string][]int // row key -> positions of its live copies
	live    int
	head    int // no live row before head
	free    int // position freed by the last change if it was a -U, else -1
	max     int // rows kept (0: no limit); beyond, the oldest go
	changes int
}

func newMaterialized(max int) *materialized {
	return &materialized{index: map[string][]int{}, free: -1, max: max}
}

func rowKey(vals []*string) string {
	var b strings.Builder
	for _, v := range vals {
		if v == nil {
			b.WriteString("\x01")
		} else {
			b.WriteString(*v)
		}
		b.WriteByte(0)
	}
	return b.String()
}

// apply folds one change into the table. A retraction of a row that is not
// there (it was dropped as too old) is ignored.
func (m *materialized) apply(ch session.Change) {
	m.changes++
	free := m.free
	m.free = -1
	k := rowKey(ch.Values)
	switch ch.Op {
	case "+I", "+U":
		pos := len(m.rows)
		if ch.Op == "+U" && free >= 0 {
			pos = free
			m.rows[pos] = ch.Values
		} else {
			m.rows = append(m.rows, ch.Values)
		}
		m.index[k] = append(m.index[k], pos)
		m.live++
		for m.max > 0 && m.live > m.max {
			m.dropOldest()
		}
	case "-U", "-D":
		ps := m.index[k]
		if len(ps) == 0 {
			return
		}
		pos := ps[len(ps)-1]
		m.remove(k, pos)
		if ch.Op == "-U" {
			m.free = pos
		}
	}
	if len(m.rows) > 1024 && len(m.rows) > 2*m.live && m.free < 0 {
		m.compact()
	}
}

func (m *materialized) remove(k string, pos int) {
	ps := m.index[k]
	for i, p := range ps {
		if p == pos {
			ps = append(ps[:i], ps[i+1:]...)
			break
		}
	}
	if len(ps) == 0 {
		delete(m.index, k)
	} else {
		m.index[k] = ps
	}
	m.rows[pos] = nil
	m.live--
}

func (m *materialized) dropOldest() {
	for m.head < len(m.rows) && m.rows[m.head] == nil {
		m.head++
	}
	if m.head < len(m.rows) {
		m.remove(rowKey(m.rows[m.head]), m.head)
	}
}

// compact drops the removed rows' places.
func (m *materialized) compact() {
	rows := make([][]*string, 0, m.live)
	m.index = map[string][]int{}
	for _, r := range m.rows {
		if r != nil {
			k := rowKey(r)
			m.index[k] = append(m.index[k], len(rows))
			rows = append(rows, r)
		}
	}
	m.rows, m.head = rows, 0
}

// cells returns the last n live rows as display text.
func (m *materialized) cells(n int) [][]string {
	var out [][]string
	for i := len(m.rows) - 1; i >= m.head && len(out) < n; i-- {
		if m.rows[i] != nil {
			out = append(out, displayRow("", m.rows[i]))
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// displayRow renders values (and op, when not empty, as a first cell).
func displayRow(op string, vals []*string) []string {
	var out []string
	if op != "" {
		out = append(out, op)
	}
	for _, v := range vals {
		if v == nil {
			out = append(out, nullText)
		} else {
			out = append(out, *v)
		}
	}
	return out
}

// liveView redraws a table in place on a terminal: the materialized result
// (table mode) or the latest changes (changelog mode).
type liveView struct {
	w         io.Writer
	cols      []string
	vc        viewConfig
	changelog bool
	m         *materialized    // table mode
	recent    []session.Change // changelog mode: the latest changes
	total     int              // changes received
	drawn     int              // lines of the frame on screen
	dirty     bool
}

// maxRecent bounds the changes a changelog view keeps.
const maxRecent = 1000

func newLiveView(w io.Writer, cols []string, vc viewConfig, changelog bool) *liveView {
	return &liveView{w: w, cols: cols, vc: vc, changelog: changelog, m: newMaterialized(vc.maxRows)}
}

func (v *liveView) run(st *session.Stream, interrupt <-chan struct{}) (bool, error) {
	tick := time.NewTicker(liveRefresh)
	defer tick.Stop()
	if err := v.draw("waiting for results; Ctrl-C to stop"); err != nil {
		return false, err
	}
	terminated, err := consume(st, interrupt, tick.C, func(b []session.Change) error {
		v.add(b)
		return nil
	}, func() error {
		if !v.dirty {
			return nil
		}
		return v.draw("refreshing; Ctrl-C to stop")
	})
	if err != nil {
		return terminated, err
	}
	status := "query finished"
	if terminated {
		status = "query terminated"
	}
	return terminated, v.draw(status)
}

func (v *liveView) add(b []session.Change) {
	v.total += len(b)
	v.dirty = true
	if v.changelog {
		v.recent = append(v.recent, b...)
		if n := len(v.recent); n > maxRecent {
			v.recent = append([]session.Change(nil), v.recent[n-maxRecent:]...)
		}
		return
	}
	for _, ch := range b {
		v.m.apply(ch)
	}
}

// visibleRows is how many rows fit the screen under the header, the
// bottom border and the status line.
func (v *liveView) visibleRows() int {
	h := 0
	if v.vc.size != nil {
		_, h = v.vc.size()
	}
	if h <= 0 {
		h = 24
	}
	return max(1, h-6)
}

// draw replaces the frame on screen by the current one.
func (v *liveView) draw(status string) error {
	v.dirty = false
	n := v.visibleRows()
	cols := v.cols
	var rows [][]string
	var shown, of int
	if v.changelog {
		cols = append([]string{"op"}, v.cols...)
		start := max(0, len(v.recent)-n)
		for _, ch := range v.recent[start:] {
			rows = append(rows, displayRow(ch.Op, ch.Values))
		}
		shown, of = len(rows), v.total
	} else {
		rows = v.m.cells(n)
		shown, of = len(rows), v.m.live
	}
	var frame bytes.Buffer
	writeFrame(&frame, cols, rows)
	what := "rows"
	if v.changelog {
		what = "changes"
	}
	fmt.Fprintf(&frame, "%s %d of %d %s", showWord(shown, of), shown, of, what)
	if !v.changelog {
		fmt.Fprintf(&frame, " (%s received)", plural(v.total, "change"))
	}
	fmt.Fprintf(&frame, "; %s\n", status)
	width := 0
	if v.vc.size != nil {
		width, _ = v.vc.size()
	}
	lines := strings.SplitAfter(frame.String(), "\n")
	var out bytes.Buffer
	out.WriteString("\r")
	if v.drawn > 0 {
		fmt.Fprintf(&out, "\033[%dA", v.drawn)
	}
	out.WriteString("\033[J")
	v.drawn = 0
	for _, l := range lines {
		if l == "" {
			continue
		}
		out.WriteString(cutLine(l, width))
		v.drawn++
	}
	_, err := v.w.Write(out.Bytes())
	return err
}

func showWord(shown, of int) string {
	if shown < of {
		return "showing the last"
	}
	return "showing"
}

// cutLine cuts a frame line (ending in a newline) to width cells, so that
// no line wraps and the cursor arithmetic of the next redraw holds.
func cutLine(l string, width int) string {
	body := strings.TrimSuffix(l, "\n")
	if width <= 0 || displayWidth(body) < width {
		return body + "\n"
	}
	n := 0
	for i := range body {
		if n == width-1 {
			return body[:i] + "\n"
		}
		n++
	}
	return body + "\n"
}

// writeFrame writes a boxed table of rows (cells already text), column
// widths from the header and the cells, at most maxStreamWidth for values.
func writeFrame(b *bytes.Buffer, cols []string, rows [][]string) {
	widths := make([]int, len(cols))
	for i, c := range cols {
		widths[i] = displayWidth(cleanCell(c))
		for _, r := range rows {
			if i < len(r) {
				widths[i] = max(widths[i], min(maxStreamWidth, displayWidth(cleanCell(r[i]))))
			}
		}
	}
	writeBorder(b, widths)
	for i, c := range cols {
		writeCell(b, cleanCell(c), widths[i])
	}
	b.WriteString("|\n")
	writeBorder(b, widths)
	for _, r := range rows {
		for i := range cols {
			c := ""
			if i < len(r) {
				c = cleanCell(r[i])
			}
			writeCell(b, truncateCell(c, widths[i]), widths[i])
		}
		b.WriteString("|\n")
	}
	writeBorder(b, widths)
}
