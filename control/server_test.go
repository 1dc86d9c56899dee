package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeEngine is an Engine whose savepoints complete when the test says so.
type fakeEngine struct {
	mu       sync.Mutex
	jobs     []JobDetails
	release  chan struct{} // closed: savepoints and stops complete
	fail     error         // the outcome of savepoints and stops
	canceled []string
	stopped  []string
	started  chan string // receives the job id when a savepoint or stop starts
}

func newFake() *fakeEngine {
	return &fakeEngine{
		jobs: []JobDetails{
			{ID: "aaaa0000", Name: "one", State: StateRunning, StartTime: 1000},
			{ID: "aaaa1111", Name: "two", State: StateFinished, StartTime: 2000},
			{ID: "bbbb2222", Name: "three", State: StateRunning, StartTime: 3000},
		},
		release: make(chan struct{}),
		started: make(chan string, 8),
	}
}

func (f *fakeEngine) Jobs() []JobDetails {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]JobDetails(nil), f.jobs...)
}

func (f *fakeEngine) Job(id string) (JobDetails, error) {
	for _, j := range f.Jobs() {
		if j.ID == id {
			return j, nil
		}
	}
	return JobDetails{}, fmt.Errorf("%w: %s", ErrNoJob, id)
}

func (f *fakeEngine) Checkpoints(id string) (CheckpointStats, error) {
	var st CheckpointStats
	if _, err := f.Job(id); err != nil {
		return st, err
	}
	st.Counts.Completed = 2
	st.History = []CheckpointEntry{{ID: 1, Status: Completed}, {ID: 2, Status: Completed}}
	return st, nil
}

func (f *fakeEngine) wait(ctx context.Context, id, dir string) (string, error) {
	f.started <- id
	select {
	case <-f.release:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	if f.fail != nil {
		return "", f.fail
	}
	return dir + "/savepoint-" + id[:6] + "-x", nil
}

func (f *fakeEngine) Savepoint(ctx context.Context, id, dir string) (string, error) {
	return f.wait(ctx, id, dir)
}

func (f *fakeEngine) setState(id, state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.jobs {
		if f.jobs[i].ID == id {
			f.jobs[i].State = state
		}
	}
}

func (f *fakeEngine) StopWithSavepoint(ctx context.Context, id, dir string, drain bool) (string, error) {
	loc, err := f.wait(ctx, id, dir)
	if err == nil {
		f.mu.Lock()
		f.stopped = append(f.stopped, fmt.Sprintf("%s drain=%v", id, drain))
		f.mu.Unlock()
		f.setState(id, StateFinished)
	}
	return loc, err
}

func (f *fakeEngine) Cancel(ctx context.Context, id string) error {
	f.mu.Lock()
	f.canceled = append(f.canceled, id)
	f.mu.Unlock()
	f.setState(id, StateCanceled)
	return nil
}

func startTest(t *testing.T, e Engine, token string) (*Server, *httptest.Server) {
	t.Helper()
	s := NewServer(e, token)
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.Close()
		s.Close()
	})
	return s, hs
}

func TestReadEndpoints(t *testing.T) {
	f := newFake()
	_, hs := startTest(t, f, "")
	c := &Client{URL: hs.URL}
	ctx := context.Background()

	jobs, err := c.Jobs(ctx)
	if err != nil || len(jobs) != 3 || jobs[0] != (JobStatus{ID: "aaaa0000", Status: StateRunning}) {
		t.Fatalf("GET /jobs: %+v, %v", jobs, err)
	}
	ov, err := c.Overview(ctx)
	if err != nil || len(ov) != 3 || ov[2] != (JobOverview{ID: "bbbb2222", Name: "three", State: StateRunning, StartTime: 3000}) {
		t.Fatalf("GET /jobs/overview: %+v, %v", ov, err)
	}
	d, err := c.Job(ctx, "aaaa1111")
	if err != nil || d.Name != "two" || d.State != StateFinished {
		t.Fatalf("GET /jobs/:id: %+v, %v", d, err)
	}
	st, err := c.Checkpoints(ctx, "aaaa0000")
	if err != nil || st.Counts.Completed != 2 || len(st.History) != 2 {
		t.Fatalf("GET /jobs/:id/checkpoints: %+v, %v", st, err)
	}

	tests := []struct {
		name, method, path, body string
		code                     int
		msg                      string
	}{
		{"unknown job", "GET", "/jobs/nope", "", 404, "no such job"},
		{"unknown job checkpoints", "GET", "/jobs/nope/checkpoints", "", 404, "no such job"},
		{"cancel unknown", "PATCH", "/jobs/nope", "", 404, "no such job"},
		{"cancel finished", "PATCH", "/jobs/aaaa1111", "", 409, "is FINISHED, not RUNNING"},
		{"cancel bad mode", "PATCH", "/jobs/aaaa0000?mode=stop", "", 400, "mode 'stop' is not supported"},
		{"savepoint of finished", "POST", "/jobs/aaaa1111/savepoints", "{}", 409, "not RUNNING"},
		{"misspelt field", "POST", "/jobs/aaaa0000/savepoints", `{"target_directory": "/x"}`, 400, `unknown field "target_directory"`},
		{"bad json", "POST", "/jobs/aaaa0000/stop", `{"drain": `, 400, "bad request body"},
		{"unknown request", "GET", "/jobs/aaaa0000/savepoints/0123", "", 404, "no savepoint or stop request 0123"},
		{"wrong method", "DELETE", "/jobs/aaaa0000", "", 405, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, hs.URL+tc.path, strings.NewReader(tc.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.code, body)
			}
			if tc.msg == "" {
				return
			}
			var er ErrorResponse
			if err := json.Unmarshal(body, &er); err != nil || len(er.Errors) != 1 || !strings.Contains(er.Errors[0], tc.msg) {
				t.Fatalf("body %s, want {\"errors\": [...%s...]}", body, tc.msg)
			}
		})
	}
	var ae *APIError
	if _, err := c.Job(ctx, "nope"); !errors.As(err, &ae) || ae.Status != 404 || !strings.Contains(ae.Error(), "no such job") {
		t.Fatalf("client error %v", err)
	}
}

func TestSavepointTriggerModel(t *testing.T) {
	tests := []struct {
		name string
		fail error
		stop bool
	}{
		{"savepoint completes", nil, false},
		{"savepoint fails", errors.New("disk full"), false},
		{"stop completes", nil, true},
		{"stop fails", errors.New("no checkpointing"), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			f.fail = tc.fail
			_, hs := startTest(t, f, "")
			c := &Client{URL: hs.URL}
			ctx := context.Background()
			var rid string
			var err error
			if tc.stop {
				rid, err = c.TriggerStop(ctx, "aaaa0000", "/sp", true)
			} else {
				rid, err = c.TriggerSavepoint(ctx, "aaaa0000", "/sp", false)
			}
			if err != nil || len(rid) != 32 {
				t.Fatalf("trigger: %q, %v", rid, err)
			}
			<-f.started
			st, err := c.Status(ctx, "aaaa0000", rid, 0)
			if err != nil || st.Status.ID != InProgress || st.Operation != nil {
				t.Fatalf("status before completion: %+v, %v", st, err)
			}
			if _, err := c.Status(ctx, "bbbb2222", rid, 0); err == nil {
				t.Fatal("a request id is only valid for its job")
			}
			close(f.release)
			loc, err := c.Await(ctx, "aaaa0000", rid)
			if tc.fail != nil {
				if err == nil || err.Error() != tc.fail.Error() || loc != "" {
					t.Fatalf("Await: %q, %v; want the failure", loc, err)
				}
				st, _ := c.Status(ctx, "aaaa0000", rid, 0)
				if st.Status.ID != Completed || st.Operation.FailureCause == nil {
					t.Fatalf("status: %+v", st)
				}
				return
			}
			if err != nil || loc != "/sp/savepoint-aaaa00-x" {
				t.Fatalf("Await: %q, %v", loc, err)
			}
			if tc.stop {
				if d, _ := c.Job(ctx, "aaaa0000"); d.State != StateFinished || f.stopped[0] != "aaaa0000 drain=true" {
					t.Fatalf("after stop: %+v %q", d, f.stopped)
				}
			}
		})
	}
}

func TestCancelAndCancelJobSavepoint(t *testing.T) {
	f := newFake()
	close(f.release)
	_, hs := startTest(t, f, "")
	c := &Client{URL: hs.URL}
	ctx := context.Background()
	if err := c.Cancel(ctx, "bbbb2222"); err != nil {
		t.Fatal(err)
	}
	rid, err := c.TriggerSavepoint(ctx, "aaaa0000", "/d", true)
	if err != nil {
		t.Fatal(err)
	}
	if loc, err := c.Await(ctx, "aaaa0000", rid); err != nil || loc != "/d/savepoint-aaaa00-x" {
		t.Fatalf("%q %v", loc, err)
	}
	if strings.Join(f.canceled, ",") != "bbbb2222,aaaa0000" {
		t.Fatalf("canceled %q", f.canceled)
	}
}

func TestTokenAuth(t *testing.T) {
	const token = "0123456789abcdef-secret"
	_, hs := startTest(t, newFake(), token)
	tests := []struct {
		name   string
		header string
		code   int
	}{
		{"no header", "", http.StatusUnauthorized},
		{"wrong token", "Bearer 0123456789abcdef-wrong", http.StatusUnauthorized},
		{"not bearer", "Basic " + token, http.StatusUnauthorized},
		{"token prefix", "Bearer " + token[:10], http.StatusUnauthorized},
		{"right token", "Bearer " + token, http.StatusOK},
		{"lower-case scheme", "bearer " + token, http.StatusOK},
	}
	for _, tc := range tests {
		for _, path := range []string{"/jobs", "/jobs/aaaa0000", "/nowhere"} {
			req, _ := http.NewRequest("GET", hs.URL+path, nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			want := tc.code
			if path == "/nowhere" && want == http.StatusOK {
				want = http.StatusNotFound
			}
			if resp.StatusCode != want {
				t.Errorf("%s %s: status %d, want %d", tc.name, path, resp.StatusCode, want)
			}
			if want == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s: 401 without WWW-Authenticate", tc.name)
			}
		}
	}
}

func TestCheckConfig(t *testing.T) {
	const token = "0123456789abcdef"
	tests := []struct {
		cfg  Config
		want string // "" = accepted
	}{
		{Config{}, ""},
		{Config{Address: "127.0.0.1"}, ""},
		{Config{Address: "localhost"}, ""},
		{Config{Address: "::1"}, ""},
		{Config{Address: "[::1]", Port: 8081}, ""},
		{Config{Address: "0.0.0.0"}, "rest.address '0.0.0.0' is not a loopback address: set 'rest.token'"},
		{Config{Address: "::"}, "set 'rest.token'"},
		{Config{Address: "192.0.2.7"}, "set 'rest.token'"},
		{Config{Address: "0.0.0.0", Token: token}, ""},
		{Config{Address: "0.0.0.0", Token: "tiny1"}, "rest.token is too short (5 characters)"},
		{Config{Port: 70000}, "rest.port 70000"},
		{Config{Port: -1}, "rest.port -1"},
	}
	for _, tc := range tests {
		err := CheckConfig(tc.cfg)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.cfg, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
		if err != nil && tc.cfg.Token != "" && strings.Contains(err.Error(), tc.cfg.Token) {
			t.Errorf("%+v: the error shows the token: %v", tc.cfg, err)
		}
	}
}

// TestNonLoopbackBind binds to every interface: refused without a token;
// with one, requests without it get 401 and requests with it 200.
func TestNonLoopbackBind(t *testing.T) {
	if _, err := Start(newFake(), Config{Address: "0.0.0.0"}); err == nil || !strings.Contains(err.Error(), "rest.token") {
		t.Fatalf("Start without a token: %v, want a refusal naming rest.token", err)
	}
	const token = "a-long-enough-test-token"
	s, err := Start(newFake(), Config{Address: "0.0.0.0", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
		t.Fatalf("URL %s: local clients should use loopback", s.URL())
	}
	ctx := context.Background()
	var ae *APIError
	if _, err := (&Client{URL: s.URL()}).Jobs(ctx); !errors.As(err, &ae) || ae.Status != 401 {
		t.Fatalf("without token: %v", err)
	}
	if _, err := (&Client{URL: s.URL(), Token: "a-long-enough-test-tokeN"}).Jobs(ctx); !errors.As(err, &ae) || ae.Status != 401 {
		t.Fatalf("wrong token: %v", err)
	}
	if jobs, err := (&Client{URL: s.URL(), Token: token}).Jobs(ctx); err != nil || len(jobs) != 3 {
		t.Fatalf("with token: %v %v", jobs, err)
	}
}

func TestMask(t *testing.T) {
	for tok, want := range map[string]string{"": "****", "short": "****", "0123456789abcdef": "0123…"} {
		if got := Mask(tok); got != want {
			t.Errorf("Mask(%q) = %q, want %q", tok, got, want)
		}
	}
}

// TestCloseWaitsForStopResult: a process closes its API right after its
// job stopped; the client still gets the result of the stop.
func TestCloseWaitsForStopResult(t *testing.T) {
	f := newFake()
	s, hs := startTest(t, f, "")
	c := &Client{URL: hs.URL}
	ctx := context.Background()
	rid, err := c.TriggerStop(ctx, "aaaa0000", "/sp", false)
	if err != nil {
		t.Fatal(err)
	}
	<-f.started
	close(f.release)
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	loc, err := c.Await(ctx, "aaaa0000", rid)
	if err != nil || loc != "/sp/savepoint-aaaa00-x" {
		t.Fatalf("%q %v", loc, err)
	}
	<-closed
}
