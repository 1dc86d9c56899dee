package planner

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/streamsql/streamsql/catalog"
)

// Upgrade compatibility.
//
// A savepoint records, as meta["operators"], the document OperatorsMeta
// returns for the job's plan: every operator that owns state, with its id
// and its state schema. Before a job restores from a savepoint, CheckUpgrade
// matches the new plan's operators against that document by id:
//
//	RESTORED      same id, same state schema: the state is loaded
//	NEW           no state under this id: the operator starts empty
//	UNCLAIMED     state in the savepoint that no operator claims
//	INCOMPATIBLE  same id, different state schema (the report says how)
//
// A restore is refused when an operator is incompatible, or when state is
// unclaimed and 'execution.savepoint.ignore-unclaimed-state' is not set.
// The state of a two-phase sink (its uncommitted output) never blocks: it is
// dropped when the sink is gone, as writing to another sink is a supported
// change.

// OperatorsMetaVersion is the version of the OperatorsMeta document.
const OperatorsMetaVersion = 1

// Operator kinds in the OperatorsMeta document.
const (
	KindSource         = "source"
	KindGroupAggregate = "group-aggregate"
	KindSink           = "sink"
	// KindWindowAggregate is a window aggregation (keys, accumulators and
	// the window); KindWatermark a WatermarkAssigner (the largest event
	// time seen per source subtask).
	KindWindowAggregate = "window-aggregate"
	KindWatermark       = "watermark"
	// KindWindowRank is a Window TopN or window deduplication (keys: the
	// partition keys and the window; rows: the buffered rows' columns).
	KindWindowRank = "window-rank"
	// KindRank is a regular TopN, KindDeduplicate a regular deduplication
	// (rank.go; keys: the partition keys; rows: the kept rows' columns).
	KindRank        = "rank"
	KindDeduplicate = "deduplicate"
	// KindOverAggregate is an OVER aggregation (over.go; keys: the
	// partition keys; rows: the kept rows' columns; accumulators; window:
	// the frame).
	KindOverAggregate = "over-aggregate"
	// KindJoin is a regular join (keys: the left side's join key; rows: the
	// columns of both sides' rows; rank: the join type and state layouts).
	KindJoin = "join"
	// KindIntervalJoin and KindWindowJoin are the time-bounded joins
	// (intervaljoin.go, windowjoin.go): as a join, plus the bounds or the
	// window.
	KindIntervalJoin = "interval-join"
	KindWindowJoin   = "window-join"
	// KindLimit is LIMIT/OFFSET without ORDER BY (rank: the range; its
	// state is the count of rows seen); KindTemporalSort an ORDER BY a time
	// attribute (keys: the time; rows: the buffered rows' columns).
	KindLimit        = "limit"
	KindTemporalSort = "temporal-sort"
)

// OperatorsDoc is the JSON document of OperatorsMeta:
//
//	{"version": 1, "operators": [
//	  {"id": "…", "kind": "source", "description": "Source: words",
//	   "state": {"connector": "socket"}},
//	  {"id": "wc", "kind": "group-aggregate", "uid": true,
//	   "description": "GroupAggregate(groupBy=[word], select=[COUNT(*) AS EXPR$0]) on words",
//	   "state": {"keys": [{"name": "word", "type": "STRING"}],
//	             "accumulators": [{"fn": "count_star", "type": "BIGINT"}]}},
//	  {"id": "…", "kind": "sink", "description": "Sink: out", "state": {"connector": "filesystem"}}]}
type OperatorsDoc struct {
	Version   int            `json:"version"`
	Operators []OperatorMeta `json:"operators"`
}

// OperatorMeta is one operator that owns state.
type OperatorMeta struct {
	ID          string      `json:"id"`
	Kind        string      `json:"kind"`
	UID         bool        `json:"uid,omitempty"` // the id was pinned by a UID hint
	Description string      `json:"description"`
	State       StateSchema `json:"state"`
}

// StateSchema is what an operator's stored state looks like. Types are
// rendered without NOT NULL: nullability does not change the encoding.
type StateSchema struct {
	// Connector of a source or sink ("values" for the VALUES source).
	Connector string `json:"connector,omitempty"`
	// Keys and Accumulators of a group aggregation: per group, the key
	// columns, a row count and each accumulator's state.
	Keys         []StateColumn      `json:"keys,omitempty"`
	Accumulators []AccumulatorState `json:"accumulators,omitempty"`
	// Window of a window aggregation (WindowSpec.String); a changed window
	// cannot read the state of the old one.
	Window string `json:"window,omitempty"`
	// Rows and Rank of a window rank: the columns of the rows it buffers,
	// and its ranking (function, range, order).
	Rows []StateColumn `json:"rows,omitempty"`
	Rank string        `json:"rank,omitempty"`
}

// StateColumn is a key column of keyed state.
type StateColumn struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// AccumulatorState is one aggregate's accumulator.
type AccumulatorState struct {
	Fn       string `json:"fn"` // AggCall.Fn: count_star, count, sum, min, max, avg
	Distinct bool   `json:"distinct,omitempty"`
	ArgType  string `json:"arg_type,omitempty"`
	Type     string `json:"type"` // result type
	// Retract: MIN/MAX over an updating input keep every value (a multiset).
	Retract bool `json:"retract,omitempty"`
}

func (a AccumulatorState) String() string {
	var sb strings.Builder
	if a.Fn == "count_star" {
		sb.WriteString("COUNT(*)")
	} else {
		sb.WriteString(strings.ToUpper(a.Fn) + "(")
		if a.Distinct {
			sb.WriteString("DISTINCT ")
		}
		sb.WriteString(a.ArgType + ")")
	}
	sb.WriteString(" -> " + a.Type)
	if a.Retract {
		sb.WriteString(" [retracting input]")
	}
	return sb.String()
}

// TwoPhaseSinkConnector reports whether a connector's sink keeps state in
// checkpoints (commits its output when a checkpoint completes). Only such
// sinks appear in OperatorsMeta. Today that is the filesystem sink
// (exec/connectors/filesink.go).
func TwoPhaseSinkConnector(connector string) bool { return connector == "filesystem" }

// Operators lists the operators of plan that own state, in plan order:
// per task its source, its aggregations, its two-phase sink.
func Operators(plan *Physical) []OperatorMeta {
	var out []OperatorMeta
	for _, t := range plan.Tasks {
		if s := t.Source; s != nil {
			m := OperatorMeta{ID: s.ID, Kind: KindSource, State: StateSchema{Connector: "values"}, Description: "Source: Values"}
			if !s.Values {
				m.Description = "Source: " + s.Table.Name
				m.State.Connector = s.Table.Connector()
			}
			out = append(out, m)
		}
		for _, op := range t.Ops {
			switch a := op.(type) {
			case *AggOp:
				out = append(out, aggMeta(t, a))
			case *WindowAggOp:
				out = append(out, windowAggMeta(t, a))
			case *WindowRankOp:
				out = append(out, windowRankMeta(t, a))
			case *RankOp, *DeduplicateOp:
				out = append(out, rankMeta(t, a))
			case *OverAggOp:
				out = append(out, overMeta(t, a))
			case *JoinOp:
				out = append(out, joinMeta(t, a))
			case *IntervalJoinOp:
				out = append(out, intervalJoinMeta(t, a))
			case *WindowJoinOp:
				out = append(out, windowJoinMeta(t, a))
			case *TemporalJoinOp:
				out = append(out, temporalJoinMeta(t, a))
			case *LimitOp:
				m := OperatorMeta{ID: a.ID, Kind: KindLimit, Description: a.Describe(), UID: !isDerivedID(a.ID)}
				m.State.Rank = fmt.Sprintf("offset=%d fetch=%d", a.Offset, a.Count)
				out = append(out, m)
			case *SortOp:
				m := OperatorMeta{ID: a.ID, Kind: KindTemporalSort, Description: a.Describe(), UID: !isDerivedID(a.ID)}
				m.State.Keys = []StateColumn{{Name: a.Out[a.Time].Name, Type: typeName(a.Out[a.Time].Type)}}
				for _, c := range a.Out {
					m.State.Rows = append(m.State.Rows, StateColumn{Name: c.Name, Type: typeName(c.Type)})
				}
				out = append(out, m)
			case *WatermarkAssignerOp:
				out = append(out, OperatorMeta{ID: a.ID, Kind: KindWatermark, Description: a.Describe(), UID: !isDerivedID(a.ID)})
			}
		}
		if s := t.Sink; s != nil && s.Table != nil && TwoPhaseSinkConnector(s.Table.Connector()) {
			out = append(out, OperatorMeta{ID: s.ID, Kind: KindSink, Description: "Sink: " + s.Table.Name,
				State: StateSchema{Connector: s.Table.Connector()}})
		}
	}
	return out
}

func aggMeta(t *Task, a *AggOp) OperatorMeta {
	m := OperatorMeta{ID: a.ID, Kind: KindGroupAggregate, Description: a.Describe()}
	if srcs := taskSources(t); len(srcs) > 0 {
		m.Description += " on " + strings.Join(srcs, ", ")
	}
	m.UID = !isDerivedID(a.ID)
	for i := range a.Keys {
		c := a.Out[i]
		m.State.Keys = append(m.State.Keys, StateColumn{Name: c.Name, Type: typeName(c.Type)})
	}
	for _, c := range a.Aggs {
		acc := AccumulatorState{Fn: c.Fn, Distinct: c.Distinct, Type: typeName(c.T)}
		if c.Fn != "count_star" {
			acc.ArgType = typeName(c.ArgType)
		}
		acc.Retract = (c.Fn == "min" || c.Fn == "max") && a.InputMode == Retract
		m.State.Accumulators = append(m.State.Accumulators, acc)
	}
	return m
}

func windowAggMeta(t *Task, a *WindowAggOp) OperatorMeta {
	g := aggMeta(t, &AggOp{ID: a.ID, Keys: a.Keys, Out: a.Out, Aggs: a.Aggs})
	g.Kind, g.Description = KindWindowAggregate, a.Describe()
	if srcs := taskSources(t); len(srcs) > 0 {
		g.Description += " on " + strings.Join(srcs, ", ")
	}
	g.State.Window = a.Window.String()
	if a.Proctime { // its slices and timers are in processing time
		g.State.Window += " over processing time"
	}
	if a.Attached { // its slots are windows, not slices
		g.State.Window += " attached"
	}
	return g
}

func windowRankMeta(t *Task, a *WindowRankOp) OperatorMeta {
	m := OperatorMeta{ID: a.ID, Kind: KindWindowRank, Description: a.Describe(), UID: !isDerivedID(a.ID)}
	if srcs := taskSources(t); len(srcs) > 0 {
		m.Description += " on " + strings.Join(srcs, ", ")
	}
	for _, k := range append(append([]int{}, a.PartKeys...), a.WinStart, a.WinEnd) {
		m.State.Keys = append(m.State.Keys, StateColumn{Name: a.Out[k].Name, Type: typeName(a.Out[k].Type)})
	}
	for _, c := range a.Out[:len(a.Out)-1] {
		m.State.Rows = append(m.State.Rows, StateColumn{Name: c.Name, Type: typeName(c.Type)})
	}
	order := make([]string, len(a.Order))
	for i, k := range a.Order {
		order[i] = fmt.Sprintf("$%d", k.Col)
		if k.Desc {
			order[i] += " DESC"
		}
	}
	m.State.Rank = fmt.Sprintf("%s %d..%d ORDER BY %s", a.RankType, a.RankStart, a.RankEnd, strings.Join(order, ", "))
	if a.Dedup {
		m.State.Rank += " (deduplicate)"
	}
	m.State.Window = a.Window
	return m
}

func joinMeta(t *Task, a *JoinOp) OperatorMeta {
	m := OperatorMeta{ID: a.ID, Kind: KindJoin, Description: a.Describe(), UID: !isDerivedID(a.ID)}
	if srcs := taskSources(t); len(srcs) > 0 {
		m.Description += " on " + strings.Join(srcs, ", ")
	}
	for _, k := range a.Left.Keys {
		m.State.Keys = append(m.State.Keys, StateColumn{Name: a.Left.Schema[k].Name, Type: typeName(a.Left.Schema[k].Type)})
	}
	for _, side := range []struct {
		name string
		s    JoinSide
	}{{"left", a.Left}, {"right", a.Right}} {
		for _, c := range side.s.Schema {
			m.State.Rows = append(m.State.Rows, StateColumn{Name: side.name + "." + c.Name, Type: typeName(c.Type)})
		}
	}
	m.State.Rank = fmt.Sprintf("%s left=%s right=%s", a.Type, a.Left.inputSpec(), a.Right.inputSpec())
	return m
}

// isDerivedID reports whether id has the form of a derived id (16 hex
// digits, optionally #n) rather than a UID hint's name.
func isDerivedID(id string) bool {
	if i := strings.IndexByte(id, '#'); i >= 0 {
		id = id[:i]
	}
	if len(id) != 16 {
		return false
	}
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// taskSources names the source tables feeding task t.
func taskSources(t *Task) []string {
	seen := map[string]bool{}
	var out []string
	var walk func(t *Task)
	walk = func(t *Task) {
		if s := t.Source; s != nil {
			name := "Values"
			if !s.Values {
				name = s.Table.Name
			}
			if !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
		for _, e := range t.Inputs {
			walk(e.From)
		}
	}
	walk(t)
	return out
}

func typeName(t catalog.Type) string { return t.Nullable().String() }

// OperatorsMeta returns the JSON document (see OperatorsDoc) that a
// savepoint records as meta["operators"] for plan.
func OperatorsMeta(plan *Physical) string {
	doc := OperatorsDoc{Version: OperatorsMetaVersion, Operators: Operators(plan)}
	if doc.Operators == nil {
		doc.Operators = []OperatorMeta{}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err) // plain strings and bools only
	}
	return string(b)
}

// ParseOperatorsMeta reads a document written by OperatorsMeta.
func ParseOperatorsMeta(s string) (*OperatorsDoc, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("the savepoint records no operators (meta \"operators\" is missing): it cannot be checked for upgrades")
	}
	var doc OperatorsDoc
	if err := json.Unmarshal([]byte(s), &doc); err != nil {
		return nil, fmt.Errorf("the savepoint's operator list (meta \"operators\") is not valid: %v", err)
	}
	if doc.Version < 1 || doc.Version > OperatorsMetaVersion {
		return nil, fmt.Errorf("the savepoint's operator list has version %d; this build reads version %d", doc.Version, OperatorsMetaVersion)
	}
	for i, op := range doc.Operators {
		if op.ID == "" || op.Kind == "" {
			return nil, fmt.Errorf("the savepoint's operator list is not valid: operator %d has no id or kind", i+1)
		}
	}
	return &doc, nil
}

// UpgradeStatus is what happens to one operator's state on restore.
type UpgradeStatus string

const (
	StatusRestored     UpgradeStatus = "RESTORED"
	StatusNew          UpgradeStatus = "NEW"
	StatusUnclaimed    UpgradeStatus = "UNCLAIMED"
	StatusIncompatible UpgradeStatus = "INCOMPATIBLE"
)

// UpgradeEntry is one operator of an UpgradeReport.
type UpgradeEntry struct {
	Status      UpgradeStatus
	ID          string
	Kind        string
	Description string // of the new plan's operator; of the savepoint's for UNCLAIMED
	// Detail: the differences (INCOMPATIBLE), or what happens to the state.
	Detail string
	// Blocking is set on UNCLAIMED state that stops a restore unless
	// unclaimed state may be ignored (all but two-phase sinks' state).
	Blocking bool
}

// UpgradeReport is the result of CheckUpgrade: the new plan's operators in
// plan order, then the savepoint's unclaimed ones in savepoint order.
type UpgradeReport struct {
	Entries         []UpgradeEntry
	IgnoreUnclaimed bool
}

// Count returns the number of entries with status st.
func (r *UpgradeReport) Count(st UpgradeStatus) int {
	n := 0
	for _, e := range r.Entries {
		if e.Status == st {
			n++
		}
	}
	return n
}

func (r *UpgradeReport) blockingUnclaimed() int {
	n := 0
	for _, e := range r.Entries {
		if e.Status == StatusUnclaimed && e.Blocking {
			n++
		}
	}
	return n
}

// Err returns nil when the job may restore from the savepoint, otherwise
// an *UpgradeError carrying the report.
func (r *UpgradeReport) Err() error {
	if r.Count(StatusIncompatible) > 0 || (!r.IgnoreUnclaimed && r.blockingUnclaimed() > 0) {
		return &UpgradeError{Report: r}
	}
	return nil
}

// Verdict is the report's last line.
func (r *UpgradeReport) Verdict() string {
	plural := func(n int, one, many string) string {
		if n == 1 {
			return fmt.Sprintf("%d %s", n, one)
		}
		return fmt.Sprintf("%d %s", n, many)
	}
	inc, unc := r.Count(StatusIncompatible), r.blockingUnclaimed()
	switch {
	case inc > 0:
		msg := "REFUSED: " + plural(inc, "operator has", "operators have") + " incompatible state"
		if unc > 0 && !r.IgnoreUnclaimed {
			msg += "; " + plural(unc, "operator's", "operators'") + " state is unclaimed"
		}
		return msg
	case unc > 0 && !r.IgnoreUnclaimed:
		return "REFUSED: the state of " + plural(unc, "operator", "operators") +
			" is unclaimed; SET 'execution.savepoint.ignore-unclaimed-state' = 'true' to drop it"
	}
	parts := []string{plural(r.Count(StatusRestored), "restored", "restored"), plural(r.Count(StatusNew), "new", "new")}
	if n := r.Count(StatusUnclaimed); n > 0 {
		parts = append(parts, plural(n, "unclaimed (dropped)", "unclaimed (dropped)"))
	}
	return "COMPATIBLE: " + strings.Join(parts, ", ")
}

// String renders the report: one line per operator, then the verdict.
func (r *UpgradeReport) String() string {
	var sb strings.Builder
	sb.WriteString("== Upgrade Check ==\n")
	if len(r.Entries) == 0 {
		sb.WriteString("(no operator keeps state)\n")
	}
	for _, e := range r.Entries {
		fmt.Fprintf(&sb, "%-13s %s [id=%s]", e.Status, e.Description, e.ID)
		if e.Detail != "" {
			sb.WriteString(": " + e.Detail)
		}
		sb.WriteByte('\n')
	}
	sb.WriteString("== Result ==\n")
	sb.WriteString(r.Verdict())
	sb.WriteByte('\n')
	return sb.String()
}

// UpgradeError refuses a restore; its message is the whole report.
type UpgradeError struct{ Report *UpgradeReport }

func (e *UpgradeError) Error() string {
	return "the savepoint's state does not fit this job:\n" + strings.TrimSuffix(e.Report.String(), "\n")
}

// CheckUpgrade matches plan's stateful operators against the operators a
// savepoint recorded (savepointOperators: its meta["operators"]). The error
// is about the document; whether the restore may go ahead is report.Err().
func CheckUpgrade(savepointOperators string, plan *Physical, ignoreUnclaimed bool) (*UpgradeReport, error) {
	old, err := ParseOperatorsMeta(savepointOperators)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]int, len(old.Operators))
	for i, op := range old.Operators {
		byID[op.ID] = i
	}
	claimed := make([]bool, len(old.Operators))
	rep := &UpgradeReport{IgnoreUnclaimed: ignoreUnclaimed}
	for _, op := range Operators(plan) {
		e := UpgradeEntry{ID: op.ID, Kind: op.Kind, Description: op.Description}
		i, ok := byID[op.ID]
		if !ok {
			e.Status, e.Detail = StatusNew, "starts empty"
			rep.Entries = append(rep.Entries, e)
			continue
		}
		claimed[i] = true
		if diffs := stateDiff(old.Operators[i], op); len(diffs) > 0 {
			e.Status, e.Detail = StatusIncompatible, strings.Join(diffs, "; ")
		} else {
			e.Status = StatusRestored
		}
		rep.Entries = append(rep.Entries, e)
	}
	for i, op := range old.Operators {
		if claimed[i] {
			continue
		}
		e := UpgradeEntry{Status: StatusUnclaimed, ID: op.ID, Kind: op.Kind, Description: op.Description}
		switch {
		case op.Kind == KindSink:
			e.Detail = "the sink is gone; its uncommitted output is dropped"
		case ignoreUnclaimed:
			e.Blocking, e.Detail = true, "no operator claims this state; dropped (ignore-unclaimed-state)"
		default:
			e.Blocking, e.Detail = true, "no operator claims this state"
		}
		rep.Entries = append(rep.Entries, e)
	}
	return rep, nil
}

// stateDiff lists how the state schema of now differs from was.
func stateDiff(was, now OperatorMeta) []string {
	if was.Kind != now.Kind {
		return []string{fmt.Sprintf("the savepoint has a %s under this id (%s), the job a %s", was.Kind, was.Description, now.Kind)}
	}
	var d []string
	if was.State.Connector != now.State.Connector {
		d = append(d, fmt.Sprintf("connector was '%s', now '%s'", was.State.Connector, now.State.Connector))
	}
	wk, nk := was.State.Keys, now.State.Keys
	if len(wk) != len(nk) {
		d = append(d, fmt.Sprintf("grouping keys were [%s], now [%s]", keyList(wk), keyList(nk)))
	} else {
		for i := range wk {
			if wk[i].Type != nk[i].Type {
				d = append(d, fmt.Sprintf("grouping key %d (%s) was %s, now %s", i+1, nk[i].Name, wk[i].Type, nk[i].Type))
			}
		}
	}
	if was.State.Window != now.State.Window {
		d = append(d, fmt.Sprintf("window was %s, now %s", was.State.Window, now.State.Window))
	}
	if len(was.State.Rows) != len(now.State.Rows) {
		d = append(d, fmt.Sprintf("buffered rows were [%s], now [%s]", keyList(was.State.Rows), keyList(now.State.Rows)))
	} else {
		for i, c := range was.State.Rows {
			if c.Type != now.State.Rows[i].Type {
				d = append(d, fmt.Sprintf("buffered column %d (%s) was %s, now %s", i+1, now.State.Rows[i].Name, c.Type, now.State.Rows[i].Type))
			}
		}
	}
	if was.State.Rank != now.State.Rank {
		d = append(d, fmt.Sprintf("ranking was %s, now %s", was.State.Rank, now.State.Rank))
	}
	wa, na := was.State.Accumulators, now.State.Accumulators
	if len(wa) != len(na) {
		d = append(d, fmt.Sprintf("accumulators were [%s], now [%s]", accList(wa), accList(na)))
	} else {
		for i := range wa {
			if wa[i] != na[i] {
				d = append(d, fmt.Sprintf("accumulator %d was %s, now %s", i+1, wa[i], na[i]))
			}
		}
	}
	return d
}

func keyList(ks []StateColumn) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = k.Name + " " + k.Type
	}
	return strings.Join(s, ", ")
}

func accList(as []AccumulatorState) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}
