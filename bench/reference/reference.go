package reference

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/bench/nexmark"
	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec"
	"github.com/streamsql/streamsql/exec/bufpool"
	"github.com/streamsql/streamsql/exec/connectors"
	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/session"
)

// Queries lists the queries with a kernel: "q1", "q2", "q5", "q17".
func Queries() []string { return []string{"q1", "q2", "q5", "q17"} }

// Result of one reference run.
type Result struct {
	Events  int64 // events generated (all kinds, as the engine counts: events.num)
	OutRows int64 // rows the kernel produced (changelog rows for q17)
	Wall    time.Duration
	CPU     time.Duration // user+system CPU of the whole process during the run (getrusage)
	GenCPU  time.Duration // CPU of a second, generator-only pass over the same events
}

// Run generates events nexmark events (seed 0, the options of
// bench/nexmark/ddl_gen.sql with TPS=10000000) at parallelism 1 in
// batches of batch rows and runs query's kernel over them. Wall and CPU
// cover generation and the kernel; GenCPU is the CPU of the same source run
// again into a no-op emit (so CPU - GenCPU is the kernel's share). Unknown
// query: error.
func Run(ctx context.Context, query string, events int64, batch int) (Result, error) {
	res, err := run(ctx, config{query: query, events: events, batch: batch})
	if err != nil {
		return res, err
	}
	gen, err := generateOnly(ctx, config{query: query, events: events, batch: batch})
	res.GenCPU = gen
	return res, err
}

// config is one run: Run's arguments, plus what the tests vary.
type config struct {
	query  string
	events int64
	batch  int
	vars   map[string]string   // more ${VAR}s of the nexmark scripts (TPS, ...)
	edit   func(string) string // tests: rewrites the script (nil: none)
	mem    memory.Allocator    // nil: a Go allocator (the engine's default)
	// onOut, when set, is called after the kernel has written a batch of
	// output rows into its buffers (they are reused by the next batch).
	onOut func(k kernel)
}

// kernel is one query's hand-written loop. process reads a batch of the
// nexmark source (it does not keep or release it), finish is the end of
// the input; both write their output rows into buffers reused across
// batches.
type kernel interface {
	process(rec arrow.Record)
	finish()
	outRows() int64
	setOut(func())
}

func newKernel(query string, schema *arrow.Schema) (kernel, error) {
	lay, err := layoutOf(schema)
	if err != nil {
		return nil, err
	}
	switch query {
	case "q1":
		return &q1{lay: lay}, nil
	case "q2":
		return &q2{lay: lay}, nil
	case "q5":
		return newQ5(lay), nil
	case "q17":
		return newQ17(lay), nil
	}
	return nil, fmt.Errorf("reference: no kernel for query %q (have %v)", query, Queries())
}

// source is the nexmark source as the engine builds it for query: the
// datagen table of ddl_gen.sql and the columns the engine's own plan of
// the query reads (projection push-down), at parallelism 1.
type source struct {
	table  *catalog.Table
	schema catalog.Schema
	cols   []exec.ColumnUse
}

func vars(c config) map[string]string {
	v := map[string]string{"EVENTS_NUM": strconv.FormatInt(c.events, 10)}
	for k, x := range c.vars {
		v[k] = x
	}
	return v
}

// plan plans query's INSERT with the engine's planner and returns its
// nexmark source.
func plan(query string, vars map[string]string, edit func(string) string) (source, error) {
	script, err := nexmark.Script(query, vars)
	if err != nil {
		return source{}, err
	}
	if edit != nil {
		script = edit(script)
	}
	stmts, err := parser.ParseScript("SET 'parallelism.default' = '1';\n" + script)
	if err != nil {
		return source{}, err
	}
	s := session.New(session.Config{})
	defer s.Close()
	var ins []*parser.Insert
	for _, st := range stmts {
		if x, ok := st.(*parser.Insert); ok {
			ins = append(ins, x)
			continue
		}
		if _, err := s.Execute(context.Background(), st); err != nil {
			return source{}, fmt.Errorf("reference: %s: %w", query, err)
		}
	}
	if len(ins) != 1 {
		return source{}, fmt.Errorf("reference: %s has %d INSERTs, want 1", query, len(ins))
	}
	ph, err := s.Planner().PlanInserts(ins)
	if err != nil {
		return source{}, fmt.Errorf("reference: planning %s: %w", query, err)
	}
	for _, t := range ph.Tasks {
		if t.Source != nil && t.Source.Table.Connector() == "nexmark" {
			return source{table: t.Source.Table, schema: t.Source.Schema, cols: exec.SourceColumnUse(t)}, nil
		}
	}
	return source{}, fmt.Errorf("reference: no nexmark source in the plan of %s", query)
}

// readColumns renders what src is told it reads: "event_type",
// "bid.price", ... sorted; "*" for every column.
func readColumns(src source) string {
	if src.cols == nil {
		return "*"
	}
	var got []string
	for i, col := range src.schema {
		u := src.cols[i]
		if !u.Used {
			continue
		}
		if u.Fields == nil {
			got = append(got, col.Name)
			continue
		}
		for f, fc := range col.Type.Fields {
			if u.FieldUsed(f) {
				got = append(got, col.Name+"."+fc.Name)
			}
		}
	}
	sort.Strings(got)
	s := ""
	for i, g := range got {
		if i > 0 {
			s += " "
		}
		s += g
	}
	return s
}

func (src source) open(c config) (exec.Source, error) {
	mem := c.mem
	if mem == nil {
		mem = bufpool.New(0) // as the engine's session
	}
	return connectors.NewSource(src.table, &exec.SourceContext{
		Subtask: 0, Parallelism: 1, Mem: mem, BatchSize: c.batch,
		Table: src.table, Schema: src.schema, Columns: src.cols,
	})
}

func check(c config) error {
	known := false
	for _, q := range Queries() {
		known = known || q == c.query
	}
	if !known {
		return fmt.Errorf("reference: no kernel for query %q (have %v)", c.query, Queries())
	}
	if c.events <= 0 {
		return fmt.Errorf("reference: events must be positive, got %d", c.events)
	}
	if c.batch <= 0 {
		return fmt.Errorf("reference: batch must be positive, got %d", c.batch)
	}
	return nil
}

// run is Run without the generator-only pass; it also returns the kernel
// (its state after the end of the input).
func run(ctx context.Context, c config) (Result, error) {
	res, _, err := runKernel(ctx, c)
	return res, err
}

func runKernel(ctx context.Context, c config) (Result, kernel, error) {
	if err := check(c); err != nil {
		return Result{}, nil, err
	}
	src, err := plan(c.query, vars(c), c.edit)
	if err != nil {
		return Result{}, nil, err
	}
	k, err := newKernel(c.query, src.schema.Arrow())
	if err != nil {
		return Result{}, nil, err
	}
	if c.onOut != nil {
		k.setOut(func() { c.onOut(k) })
	}
	s, err := src.open(c)
	if err != nil {
		return Result{}, nil, err
	}
	defer s.Close()
	var res Result
	runtime.GC() // the planning's garbage is not the run's
	start, cpu0 := time.Now(), processCPU()
	err = s.Run(ctx, func(rec arrow.Record) error {
		if rec == nil {
			return nil
		}
		res.Events += rec.NumRows()
		k.process(rec)
		rec.Release()
		return nil
	})
	if err == nil {
		k.finish()
	}
	res.Wall, res.CPU = time.Since(start), processCPU()-cpu0
	res.OutRows = k.outRows()
	return res, k, err
}

// generateOnly runs the same source into a no-op emit and returns its CPU.
func generateOnly(ctx context.Context, c config) (time.Duration, error) {
	if err := check(c); err != nil {
		return 0, err
	}
	src, err := plan(c.query, vars(c), c.edit)
	if err != nil {
		return 0, err
	}
	s, err := src.open(c)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	runtime.GC()
	cpu0 := processCPU()
	err = s.Run(ctx, func(rec arrow.Record) error {
		if rec != nil {
			rec.Release()
		}
		return nil
	})
	return processCPU() - cpu0, err
}

// processCPU is the user + system CPU time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano()) + time.Duration(ru.Stime.Nano())
}
