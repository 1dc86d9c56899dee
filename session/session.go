package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory"

	"github.com/streamsql/streamsql/catalog"
	"github.com/streamsql/streamsql/exec"
	"github.com/streamsql/streamsql/exec/bufpool"
	"github.com/streamsql/streamsql/exec/connectors"
	"github.com/streamsql/streamsql/exec/format"
	"github.com/streamsql/streamsql/parser"
	"github.com/streamsql/streamsql/planner"
)

// Session executes statements against its catalog and options and owns the
// jobs it started. Safe for use by one client goroutine; jobs run on their
// own goroutines.
type Session struct {
	cfg     Config
	Catalog *catalog.Catalog
	Options *catalog.Options
	// Mem is the allocator of every job (tests pass a checked allocator).
	Mem memory.Allocator

	// CheckpointTestHook, when set, may adjust every job's checkpoint
	// configuration (tests: deterministic triggers, injected crashes). It
	// is called at submission, after the session set its callbacks and
	// savepoint channel (which the hook may wrap).
	CheckpointTestHook func(*exec.CheckpointConfig)
	// Clock, when set, is the processing time of every job (tests: a
	// manual clock; nil: the wall clock).
	Clock exec.Clock

	mu   sync.Mutex
	jobs []*job
}

// New returns a session with an empty catalog and default options.
func New(cfg Config) *Session {
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stdout
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	return &Session{cfg: cfg, Catalog: catalog.New(), Options: catalog.NewOptions(), Mem: bufpool.New(0)}
}

type job struct {
	info     JobInfo
	metrics  *exec.Metrics
	cancel   context.CancelFunc
	done     chan struct{}
	requests chan *exec.SavepointRequest // nil without checkpointing
	mu       sync.Mutex
}

func (j *job) snapshot() JobInfo {
	j.mu.Lock()
	defer j.mu.Unlock()
	in := j.info
	in.RecordsIn = j.metrics.RecordsIn.Load()
	in.RecordsOut = j.metrics.RecordsOut.Load()
	in.SkippedBad = j.metrics.Skipped.Load()
	in.LateRecords = j.metrics.LateRecords.Load()
	in.InputHolds = j.metrics.InputHolds.Load()
	in.InFlightRestored = j.metrics.ChannelStateReplayed.Load()
	in.RowsMapped = j.metrics.RowsMapped.Load()
	return in
}

func newJobID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

func ok(msg string) *Result { return &Result{Kind: ResultOK, Message: msg} }

const succeeded = "[INFO] Execute statement succeeded."

// Execute runs one statement. Errors about the user's text are
// *parser.Error (positions in the text the statement was parsed from).
func (s *Session) Execute(ctx context.Context, st parser.Statement) (*Result, error) {
	switch x := st.(type) {
	case *parser.CreateTable:
		return s.createTable(x)
	case *parser.CreateView:
		return s.createView(x)
	case *parser.Drop:
		if err := s.Catalog.Drop(x.Kind, x.Name, x.IfExists); err != nil {
			return nil, &parser.Error{Pos: x.NamePos, Msg: err.Error()}
		}
		return ok(succeeded), nil
	case *parser.ShowTables:
		return s.nameTable("table name", s.Catalog.TableNames()), nil
	case *parser.ShowViews:
		return s.nameTable("view name", s.Catalog.ViewNames()), nil
	case *parser.ShowFunctions:
		fns := append([]string{}, planner.FunctionNames...)
		fns = append(fns, "count", "sum", "min", "max", "avg", "split")
		for i := range fns {
			fns[i] = strings.ToUpper(fns[i])
		}
		sort.Strings(fns)
		return s.nameTable("function name", fns), nil
	case *parser.ShowCreate:
		return s.showCreate(x)
	case *parser.Describe:
		return s.describe(x)
	case *parser.Set:
		if x.Key == "" {
			res := &Result{Kind: ResultTable, Columns: []string{"key", "value"}}
			for _, kv := range s.Options.List() {
				res.Rows = append(res.Rows, []string{kv[0], kv[1]})
			}
			return res, nil
		}
		notice, err := s.Options.SetNotice(x.Key, x.Value)
		if err != nil {
			p := x.KeyPos
			if strings.HasPrefix(err.Error(), "invalid value") {
				p = x.ValuePos
			}
			return nil, &parser.Error{Pos: p, Msg: err.Error()}
		}
		res := ok("[INFO] Session property has been set.")
		if notice != "" {
			res.Warning = "[WARNING] " + notice
		}
		return res, nil
	case *parser.Reset:
		if err := s.Options.Reset(x.Key); err != nil {
			return nil, &parser.Error{Pos: x.KeyPos, Msg: err.Error()}
		}
		return ok("[INFO] Session property has been reset."), nil
	case *parser.Explain:
		ph, err := s.planStatement(x.Stmt)
		if err != nil {
			return nil, err
		}
		return &Result{Kind: ResultText, Message: planner.Explain(ph)}, nil
	case *parser.ExplainUpgrade:
		return s.explainUpgrade(x)
	case *parser.Select:
		return s.runSelect(ctx, x)
	case *parser.Insert:
		return s.submit(x, []*parser.Insert{x})
	case *parser.StatementSet:
		if len(x.Inserts) == 0 {
			return nil, &parser.Error{Pos: x.Pos, Msg: "statement set has no INSERT statements"}
		}
		return s.submit(x, x.Inserts)
	case *parser.ShowJobs:
		return s.showJobs(), nil
	case *parser.ShowCheckpoints:
		return s.showJobCheckpoints(x)
	case *parser.ShowSavepoints:
		return s.showSavepoints(x)
	case *parser.CreateSavepoint:
		return s.createSavepoint(ctx, x)
	case *parser.DescribeJob:
		return s.describeJob(x)
	case *parser.StopJob:
		return s.stopJob(x)
	case *parser.Help:
		return &Result{Kind: ResultText, Message: HelpText}, nil
	case *parser.Quit:
		return &Result{Kind: ResultQuit}, nil
	}
	return nil, &parser.Error{Pos: st.Position(), Msg: fmt.Sprintf("statement not supported yet: %s", firstWords(st.SQL()))}
}

func firstWords(s string) string {
	f := strings.Fields(s)
	if len(f) > 3 {
		f = f[:3]
	}
	return strings.Join(f, " ")
}

func (s *Session) nameTable(col string, names []string) *Result {
	r := &Result{Kind: ResultTable, Columns: []string{col}}
	for _, n := range names {
		r.Rows = append(r.Rows, []string{n})
	}
	return r
}

// Planner returns a planner bound to the session's catalog and options.
func (s *Session) Planner() *planner.Planner {
	return &planner.Planner{
		Catalog:           s.Catalog,
		Parallelism:       s.Options.Int("parallelism.default"),
		MaxParallelism:    s.Options.Int("pipeline.max-parallelism"),
		TimeZone:          s.Options.Get("table.local-time-zone"),
		WatermarkInterval: s.Options.Duration("pipeline.auto-watermark-interval"),
		IdleTimeout:       s.Options.Duration("table.exec.source.idle-timeout"),
		SourceParallelism: connectors.SourceParallelism,
		SinkParallelism:   connectors.SinkParallelism,
		NoSourceReuse:     !s.Options.Bool("table.optimizer.reuse-source-enabled"),
		NoSubPlanReuse:    !s.Options.Bool("table.optimizer.reuse-sub-plan-enabled"),
		AggPhase:          s.Options.Get("table.optimizer.agg-phase-strategy"),
		CanRead: func(t *catalog.Table) bool {
			src, _, _, ok := catalog.ConnectorCaps(t.Connector())
			return ok && src
		},
		SinkCaps: func(t *catalog.Table) (bool, bool) {
			_, sink, _, ok := catalog.ConnectorCaps(t.Connector())
			return ok && sink, catalog.TableSinkAcceptsUpdates(t)
		},
	}
}

func (s *Session) planStatement(st parser.Statement) (*planner.Physical, error) {
	p := s.Planner()
	switch x := st.(type) {
	case *parser.Select:
		ph, _, err := p.PlanSelect(x.Query)
		return ph, err
	case *parser.Insert:
		return p.PlanInserts([]*parser.Insert{x})
	case *parser.StatementSet:
		return p.PlanInserts(x.Inserts)
	}
	return nil, &parser.Error{Pos: st.Position(), Msg: "EXPLAIN supports SELECT, INSERT and EXECUTE STATEMENT SET"}
}

func (s *Session) jobConfig(m *exec.Metrics) exec.JobConfig {
	return exec.JobConfig{
		Mem:            s.Mem,
		BatchSize:      s.Options.Int("execution.batch-size"),
		Linger:         s.Options.Duration("execution.batch-linger"),
		MaxParallelism: s.Options.Int("pipeline.max-parallelism"),
		StateTTL:       s.Options.Duration("table.exec.state.ttl"),
		StateBackend:   s.Options.Get("state.backend.type"),
		StateMemory:    s.Options.MemorySize("state.backend.rocksdb.memory.fixed-per-slot"),
		StateDir:       s.Options.Path("state.backend.rocksdb.localdir"),
		Stdout:         s.cfg.Stdout,
		NewSource:      connectors.NewSource,
		NewSink:        connectors.NewSink,
		Metrics:        m,
		Clock:          s.Clock,
	}
}

func (s *Session) startJob(ctx context.Context, cancel context.CancelFunc, id, name string, ph *planner.Physical, cfg exec.JobConfig, ck *ckptSetup, onEnd func(error)) *job {
	j := &job{metrics: cfg.Metrics, cancel: cancel, done: make(chan struct{})}
	j.info = JobInfo{ID: id, Name: name, Status: "RUNNING", StartTime: time.Now(), Parallelism: s.Options.Int("parallelism.default"), Attempts: 1}
	if ck != nil {
		j.info.CheckpointDir = ck.store.JobDir()
		j.requests = make(chan *exec.SavepointRequest)
		ck.cfg.Requests = j.requests
		s.observeCheckpoints(j, ck)
	}
	s.mu.Lock()
	s.jobs = append(s.jobs, j)
	s.mu.Unlock()
	fmt.Fprintf(s.cfg.Log, "job %s (%s) started\n", j.info.ID, name)
	policy := newRestartPolicy(s.Options, ck != nil)
	go func() {
		err := s.runAttempts(ctx, j, ph, cfg, ck, policy)
		j.mu.Lock()
		switch {
		case err == nil:
			j.info.Status = "FINISHED"
		case errors.Is(err, context.Canceled):
			j.info.Status = "CANCELED"
		default:
			j.info.Status = "FAILED"
			j.info.Err = err
		}
		j.mu.Unlock()
		if ck != nil {
			if err := ck.release(j.info.Status); err != nil {
				fmt.Fprintf(s.cfg.Log, "job %s: cleaning up its checkpoint directory: %v\n", j.info.ID, err)
			}
		}
		fmt.Fprintf(s.cfg.Log, "job %s %s\n", j.info.ID, j.info.Status)
		if onEnd != nil {
			onEnd(err)
		}
		cancel()
		close(j.done)
	}()
	return j
}

// checkParallelism refuses a plan with a task whose parallelism exceeds
// pipeline.max-parallelism, as Flink does: parallelism.default, a source's
// 'scan.parallelism' or a sink's 'sink.parallelism'. The error names the
// option that set it.
func (s *Session) checkParallelism(st parser.Statement, ph *planner.Physical) error {
	maxP := s.Options.Int("pipeline.max-parallelism")
	if p := s.Options.Int("parallelism.default"); p > maxP {
		return &parser.Error{Pos: st.Position(), Msg: fmt.Sprintf("'parallelism.default' (%d) is larger than 'pipeline.max-parallelism' (%d): a subtask would own no key group", p, maxP)}
	}
	for _, t := range ph.Tasks {
		if t.Parallelism <= maxP {
			continue
		}
		what := fmt.Sprintf("the parallelism %d of %s", t.Parallelism, t.Name)
		for _, c := range []struct {
			key string
			tbl *catalog.Table
		}{{"scan.parallelism", sourceTable(t)}, {"sink.parallelism", sinkTable(t)}} {
			if c.tbl == nil {
				continue
			}
			if v, ok := c.tbl.Option(c.key); ok {
				what = fmt.Sprintf("'%s' = '%s' of table '%s'", c.key, v, c.tbl.Name)
				break
			}
		}
		return &parser.Error{Pos: st.Position(), Msg: fmt.Sprintf("%s is larger than 'pipeline.max-parallelism' (%d): no operator may have more subtasks than key groups; lower it or SET 'pipeline.max-parallelism' (at most %d)", what, maxP, catalog.MaxKeyGroups)}
	}
	return nil
}

func sourceTable(t *planner.Task) *catalog.Table {
	if t.Source == nil {
		return nil
	}
	return t.Source.Table
}

func sinkTable(t *planner.Task) *catalog.Table {
	if t.Sink == nil {
		return nil
	}
	return t.Sink.Table
}

func (s *Session) submit(st parser.Statement, ins []*parser.Insert) (*Result, error) {
	ph, err := s.Planner().PlanInserts(ins)
	if err != nil {
		return nil, err
	}
	if err := s.checkParallelism(st, ph); err != nil {
		return nil, err
	}
	name := s.Options.Get("pipeline.name")
	if name == "" {
		var sinks []string
		for _, in := range ins {
			sinks = append(sinks, in.Table)
		}
		name = "insert-into_" + strings.Join(sinks, ",")
	}
	id := newJobID()
	cfg := s.jobConfig(&exec.Metrics{})
	cfg.JobID = id
	ck, err := s.setupCheckpointing(id, name, st, ph)
	if err != nil {
		return nil, err
	}
	if ck != nil {
		cfg.Checkpoint = ck.cfg
	}
	ctx, cancel := context.WithCancel(context.Background())
	j := s.startJob(ctx, cancel, id, name, ph, cfg, ck, nil)
	return &Result{Kind: ResultJob, JobID: j.info.ID,
		Message: "[INFO] Submitting SQL update statement to the cluster...\n[INFO] SQL update statement has been successfully submitted to the cluster:\nJob ID: " + j.info.ID}, nil
}

func (s *Session) runSelect(ctx context.Context, x *parser.Select) (*Result, error) {
	ph, schema, err := s.Planner().PlanSelect(x.Query)
	if err != nil {
		return nil, err
	}
	if err := s.checkParallelism(x, ph); err != nil {
		return nil, err
	}
	ch := make(chan []Change, 16)
	cfg := s.jobConfig(&exec.Metrics{})
	jctx, cancel := context.WithCancel(context.Background())
	loc, _ := catalog.LoadZone(s.Options.Get("table.local-time-zone"))
	cfg.Collect = func(b exec.Batch) error {
		changes := make([]Change, b.Rows())
		// TIMESTAMP(p) shows p digits; TIMESTAMP_LTZ the session zone
		views := make([]format.Column, b.Rec.NumCols())
		for c := range views {
			views[c] = format.NewColumn(b.Rec.Column(c))
			if c < len(schema) && schema[c].Type.IsDatetime() {
				views[c].SetPrecision(schema[c].Type.Precision)
			}
			views[c].SetZone(loc)
		}
		var buf []byte
		for i := range changes {
			vals := make([]*string, b.Rec.NumCols())
			for c := range vals {
				if views[c].IsNull(i) {
					continue
				}
				buf = views[c].Append(buf[:0], i, format.StyleSQL)
				v := string(buf)
				vals[c] = &v
			}
			changes[i] = Change{Op: b.Op(i).String(), Values: vals}
		}
		select {
		case ch <- changes:
			return nil
		case <-jctx.Done():
			return jctx.Err()
		}
	}
	var endErr error
	j := s.startJob(jctx, cancel, newJobID(), "collect", ph, cfg, nil, func(err error) {
		endErr = err
		close(ch)
	})
	return &Result{Kind: ResultStream, Columns: schema.Names(), Stream: &Stream{
		Changes: ch,
		cancel:  j.cancel,
		err: func() error {
			<-j.done
			return endErr
		},
	}}, nil
}

// Jobs lists the session's jobs in start order.
func (s *Session) Jobs() []JobInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]JobInfo, len(s.jobs))
	for i, j := range s.jobs {
		out[i] = j.snapshot()
	}
	return out
}

// WaitJobs waits until every started job has ended; it returns the first
// failure (wrapped with the job id) or ctx.Err().
func (s *Session) WaitJobs(ctx context.Context) error {
	s.mu.Lock()
	jobs := append([]*job{}, s.jobs...)
	s.mu.Unlock()
	var first error
	for _, j := range jobs {
		select {
		case <-j.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		in := j.snapshot()
		if in.Err != nil && first == nil {
			first = fmt.Errorf("job %s (%s) failed: %w", in.ID, in.Name, in.Err)
		}
	}
	return first
}

// Close cancels every running job and waits for them to end. Idempotent.
func (s *Session) Close() error {
	s.mu.Lock()
	jobs := append([]*job{}, s.jobs...)
	s.mu.Unlock()
	for _, j := range jobs {
		j.cancel()
	}
	for _, j := range jobs {
		<-j.done
	}
	return nil
}

func (s *Session) stopJob(x *parser.StopJob) (*Result, error) {
	if x.WithSavepoint || x.WithDrain {
		info, err := s.StopWithSavepoint(context.Background(), x.ID, "", x.WithDrain)
		if err != nil {
			return nil, &parser.Error{Pos: x.Pos, Msg: err.Error()}
		}
		return &Result{Kind: ResultTable, Columns: []string{"savepoint path"}, Rows: [][]string{{info.Path}}}, nil
	}
	s.mu.Lock()
	var found *job
	for _, j := range s.jobs {
		if j.info.ID == x.ID {
			found = j
		}
	}
	s.mu.Unlock()
	if found == nil {
		return nil, &parser.Error{Pos: x.Pos, Msg: fmt.Sprintf("no job with id '%s' (SHOW JOBS lists them)", x.ID)}
	}
	found.cancel()
	<-found.done
	return ok("[INFO] Execute statement succeeded."), nil
}
