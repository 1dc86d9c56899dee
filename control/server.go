package control

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config configures a REST server (the rest.* session options).
type Config struct {
	Address string // rest.address: "" means 127.0.0.1
	Port    int    // rest.port: 0 picks a free port
	Token   string // rest.token: required unless Address is loopback
}

// MinTokenLen is the shortest token accepted.
const MinTokenLen = 16

// CheckConfig validates cfg without binding: the port range, the token's
// length, and that a non-loopback address has a token.
func CheckConfig(cfg Config) error {
	if cfg.Port < 0 || cfg.Port > 65535 {
		return fmt.Errorf("rest.port %d: expected 0 (any free port) to 65535", cfg.Port)
	}
	if cfg.Token != "" && len(cfg.Token) < MinTokenLen {
		return fmt.Errorf("rest.token is too short (%d characters): use at least %d random characters", len(cfg.Token), MinTokenLen)
	}
	host := bindHost(cfg.Address)
	lo, err := isLoopback(host)
	if err != nil {
		return fmt.Errorf("rest.address '%s': %v", cfg.Address, err)
	}
	if !lo && cfg.Token == "" {
		return fmt.Errorf("rest.address '%s' is not a loopback address: set 'rest.token' (or STREAMSQL_REST_TOKEN) so that only clients that know it can control jobs, or bind to 127.0.0.1", cfg.Address)
	}
	return nil
}

func bindHost(addr string) string {
	if strings.TrimSpace(addr) == "" {
		return "127.0.0.1"
	}
	return strings.Trim(strings.TrimSpace(addr), "[]")
}

// isLoopback reports whether host only reaches this machine.
func isLoopback(host string) (bool, error) {
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback(), nil
	}
	ips, err := net.LookupIP(host)
	if err != nil {
		return false, err
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return false, nil
		}
	}
	return len(ips) > 0, nil
}

// Server is the REST API of one process.
type Server struct {
	engine    Engine
	tokenHash [32]byte
	hasToken  bool
	mux       *http.ServeMux

	http *http.Server
	ln   net.Listener
	url  string

	ctx    context.Context // cancelled by Close: ends running operations
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	ops     map[string]*operation
	done    []string      // completed operations, oldest first
	changed chan struct{} // closed and replaced whenever an operation changes
}

// operation is a savepoint or stop in progress or completed.
type operation struct {
	id, jobID string
	stop      bool
	finished  chan struct{}
	location  string
	err       error
	fetched   bool // a client saw its completed status
}

// keepOps bounds the completed operations kept for status queries.
const keepOps = 64

// NewServer returns a server for e; token "" means no authentication. Serve
// its Handler yourself (tests: httptest) or use Start.
func NewServer(e Engine, token string) *Server {
	s := &Server{engine: e, ops: map[string]*operation{}, changed: make(chan struct{})}
	if token != "" {
		s.hasToken, s.tokenHash = true, sha256.Sum256([]byte(token))
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jobs", s.jobs)
	mux.HandleFunc("GET /jobs/overview", s.overview)
	mux.HandleFunc("GET /jobs/{id}", s.job)
	mux.HandleFunc("PATCH /jobs/{id}", s.cancelJob)
	mux.HandleFunc("GET /jobs/{id}/checkpoints", s.checkpoints)
	mux.HandleFunc("POST /jobs/{id}/savepoints", s.triggerSavepoint)
	mux.HandleFunc("POST /jobs/{id}/stop", s.triggerStop)
	mux.HandleFunc("GET /jobs/{id}/savepoints/{rid}", s.status)
	s.mux = mux
	return s
}

// Start validates cfg, binds and serves in the background.
func Start(e Engine, cfg Config) (*Server, error) {
	if err := CheckConfig(cfg); err != nil {
		return nil, err
	}
	host := bindHost(cfg.Address)
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(cfg.Port)))
	if err != nil {
		return nil, fmt.Errorf("REST API (rest.address '%s', rest.port %d): %v", host, cfg.Port, err)
	}
	s := NewServer(e, cfg.Token)
	s.ln = ln
	s.url = connectURL(host, ln.Addr().(*net.TCPAddr).Port)
	s.http = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.http.Serve(ln) }()
	return s, nil
}

// connectURL is how a local client reaches a server bound to host.
func connectURL(host string, port int) string {
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip.To4() == nil {
			host = "::1"
		}
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(port))
}

// URL is where the started server answers locally, e.g.
// http://127.0.0.1:41234.
func (s *Server) URL() string { return s.url }

// Handler is the API with authentication.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serve) }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if s.hasToken && !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="streamsql"`)
		writeError(w, http.StatusUnauthorized, "missing or wrong token: send 'Authorization: Bearer <rest.token>'")
		return
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return subtle.ConstantTimeCompare(sum[:], s.tokenHash[:]) == 1
}

// closeGrace bounds how long Close waits for clients to collect the result
// of a stop (the process usually exits right after its job stopped).
const closeGrace = 3 * time.Second

// Close stops serving: it waits (briefly) until the results of stop
// operations were collected, ends running operations and waits for them.
func (s *Server) Close() error {
	deadline := time.NewTimer(closeGrace)
	defer deadline.Stop()
wait:
	for {
		s.mu.Lock()
		pending := false
		for _, op := range s.ops {
			pending = pending || op.stop && !op.fetched
		}
		changed := s.changed
		s.mu.Unlock()
		if !pending {
			break
		}
		select {
		case <-changed:
		case <-deadline.C:
			break wait
		}
	}
	s.cancel()
	var err error
	if s.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), closeGrace)
		err = s.http.Shutdown(ctx)
		cancel()
		if err != nil {
			err = s.http.Close()
		}
	}
	s.wg.Wait()
	return err
}

func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, ErrorResponse{Errors: []string{msg}})
}

// engineError answers an engine failure: 404 for an unknown job.
func engineError(w http.ResponseWriter, err error) {
	if errors.Is(err, ErrNoJob) {
		writeError(w, http.StatusNotFound, err.Error())
		return
	}
	writeError(w, http.StatusInternalServerError, err.Error())
}

func (s *Server) jobs(w http.ResponseWriter, r *http.Request) {
	resp := JobsResponse{Jobs: []JobStatus{}}
	for _, j := range s.engine.Jobs() {
		resp.Jobs = append(resp.Jobs, JobStatus{ID: j.ID, Status: j.State})
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	resp := OverviewResponse{Jobs: []JobOverview{}}
	for _, j := range s.engine.Jobs() {
		resp.Jobs = append(resp.Jobs, JobOverview{ID: j.ID, Name: j.Name, State: j.State, StartTime: j.StartTime})
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) job(w http.ResponseWriter, r *http.Request) {
	d, err := s.engine.Job(r.PathValue("id"))
	if err != nil {
		engineError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// runningJob returns the job of the request's {id}, answering 404 or 409
// (not running) itself.
func (s *Server) runningJob(w http.ResponseWriter, r *http.Request) (JobDetails, bool) {
	d, err := s.engine.Job(r.PathValue("id"))
	if err != nil {
		engineError(w, err)
		return d, false
	}
	if d.State != StateRunning {
		writeError(w, http.StatusConflict, fmt.Sprintf("job %s is %s, not RUNNING", d.ID, d.State))
		return d, false
	}
	return d, true
}

func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request) {
	if m := r.URL.Query().Get("mode"); m != "" && m != "cancel" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("mode '%s' is not supported: use mode=cancel, or POST /jobs/:id/stop", m))
		return
	}
	d, ok := s.runningJob(w, r)
	if !ok {
		return
	}
	if err := s.engine.Cancel(r.Context(), d.ID); err != nil {
		engineError(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, struct{}{})
}

func (s *Server) checkpoints(w http.ResponseWriter, r *http.Request) {
	st, err := s.engine.Checkpoints(r.PathValue("id"))
	if err != nil {
		engineError(w, err)
		return
	}
	if st.History == nil {
		st.History = []CheckpointEntry{}
	}
	writeJSON(w, http.StatusOK, st)
}

// decodeBody reads an optional JSON body into v; unknown fields are
// errors (a misspelt "target-directory" must not be ignored).
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		return false
	}
	if strings.TrimSpace(string(data)) == "" {
		return true
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "bad request body: "+err.Error())
		return false
	}
	return true
}

func (s *Server) triggerSavepoint(w http.ResponseWriter, r *http.Request) {
	var req SavepointRequest
	if !decodeBody(w, r, &req) {
		return
	}
	d, ok := s.runningJob(w, r)
	if !ok {
		return
	}
	id := d.ID
	s.trigger(w, id, req.CancelJob, func(ctx context.Context) (string, error) {
		loc, err := s.engine.Savepoint(ctx, id, req.TargetDirectory)
		if err == nil && req.CancelJob {
			err = s.engine.Cancel(ctx, id)
		}
		return loc, err
	})
}

func (s *Server) triggerStop(w http.ResponseWriter, r *http.Request) {
	var req StopRequest
	if !decodeBody(w, r, &req) {
		return
	}
	d, ok := s.runningJob(w, r)
	if !ok {
		return
	}
	id := d.ID
	s.trigger(w, id, true, func(ctx context.Context) (string, error) {
		return s.engine.StopWithSavepoint(ctx, id, req.TargetDirectory, req.Drain)
	})
}

// trigger starts fn as an operation and answers 202 with its request id.
func (s *Server) trigger(w http.ResponseWriter, jobID string, stop bool, fn func(context.Context) (string, error)) {
	op := &operation{id: newRequestID(), jobID: jobID, stop: stop, finished: make(chan struct{})}
	s.mu.Lock()
	if s.ctx.Err() != nil {
		s.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "the process is shutting down")
		return
	}
	s.ops[op.id] = op
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		loc, err := fn(s.ctx)
		s.mu.Lock()
		op.location, op.err = loc, err
		close(op.finished)
		s.done = append(s.done, op.id)
		for len(s.done) > keepOps {
			delete(s.ops, s.done[0])
			s.done = s.done[1:]
		}
		s.notifyLocked()
		s.mu.Unlock()
	}()
	writeJSON(w, http.StatusAccepted, TriggerResponse{RequestID: op.id})
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// maxWait bounds the wait query parameter of status requests.
const maxWait = time.Minute

// status is GET /jobs/:id/savepoints/:rid. A streamsql extension: with
// ?wait=<duration> (e.g. 30s, at most 1m) it answers as soon as the
// operation completed, or after that long.
func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	op := s.ops[r.PathValue("rid")]
	s.mu.Unlock()
	if op == nil || op.jobID != r.PathValue("id") {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no savepoint or stop request %s for job %s (results are kept while the process runs)", r.PathValue("rid"), r.PathValue("id")))
		return
	}
	if wt := r.URL.Query().Get("wait"); wt != "" {
		d, err := time.ParseDuration(wt)
		if err != nil || d < 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("wait '%s': expected a duration such as 30s", wt))
			return
		}
		if d > maxWait {
			d = maxWait
		}
		t := time.NewTimer(d)
		select {
		case <-op.finished:
		case <-t.C:
		case <-r.Context().Done():
		}
		t.Stop()
	}
	var st AsyncStatus
	select {
	case <-op.finished:
		st.Status.ID = Completed
		st.Operation = &Operation{Location: op.location}
		if op.err != nil {
			st.Operation = &Operation{FailureCause: &FailureCause{Class: "streamsql.SavepointException", StackTrace: op.err.Error()}}
		}
	default:
		st.Status.ID = InProgress
	}
	writeJSON(w, http.StatusOK, st)
	if st.Status.ID == Completed {
		s.mu.Lock()
		if !op.fetched {
			op.fetched = true
			s.notifyLocked()
		}
		s.mu.Unlock()
	}
}
