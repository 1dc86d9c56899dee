package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
)

// TokenEnv is the environment variable local verbs (and processes without
// rest.token) take the REST token from.
const TokenEnv = "STREAMSQL_REST_TOKEN"

// Client talks to one process's REST API.
type Client struct {
	URL   string // e.g. http://127.0.0.1:41234
	Token string // sent as a bearer token when not empty
	// HTTP is the client used (nil: one without timeout; requests end
	// with their context).
	HTTP *http.Client
}

// APIError is an error answer of the API.
type APIError struct {
	Status   int
	Messages []string
}

func (e *APIError) Error() string {
	msg := strings.Join(e.Messages, "; ")
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("%s (HTTP %d)", msg, e.Status)
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.URL, "/")+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		ae := &APIError{Status: resp.StatusCode}
		var er ErrorResponse
		if json.Unmarshal(data, &er) == nil && len(er.Errors) > 0 {
			ae.Messages = er.Errors
		} else if t := strings.TrimSpace(string(data)); t != "" {
			ae.Messages = []string{t}
		}
		return ae
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: bad answer: %v", method, path, err)
	}
	return nil
}

func jobPath(id string, rest ...string) string {
	p := "/jobs/" + url.PathEscape(id)
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

// Jobs is GET /jobs.
func (c *Client) Jobs(ctx context.Context) ([]JobStatus, error) {
	var r JobsResponse
	err := c.do(ctx, http.MethodGet, "/jobs", nil, &r)
	return r.Jobs, err
}

// Overview is GET /jobs/overview.
func (c *Client) Overview(ctx context.Context) ([]JobOverview, error) {
	var r OverviewResponse
	err := c.do(ctx, http.MethodGet, "/jobs/overview", nil, &r)
	return r.Jobs, err
}

// Job is GET /jobs/:id.
func (c *Client) Job(ctx context.Context, id string) (JobDetails, error) {
	var d JobDetails
	err := c.do(ctx, http.MethodGet, jobPath(id), nil, &d)
	return d, err
}

// Checkpoints is GET /jobs/:id/checkpoints.
func (c *Client) Checkpoints(ctx context.Context, id string) (CheckpointStats, error) {
	var st CheckpointStats
	err := c.do(ctx, http.MethodGet, jobPath(id, "checkpoints"), nil, &st)
	return st, err
}

// Cancel is PATCH /jobs/:id?mode=cancel; it returns once the job ended.
func (c *Client) Cancel(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodPatch, jobPath(id)+"?mode=cancel", nil, nil)
}

// TriggerSavepoint is POST /jobs/:id/savepoints; it returns the request id.
func (c *Client) TriggerSavepoint(ctx context.Context, id, dir string, cancelJob bool) (string, error) {
	var r TriggerResponse
	err := c.do(ctx, http.MethodPost, jobPath(id, "savepoints"), SavepointRequest{TargetDirectory: dir, CancelJob: cancelJob}, &r)
	return r.RequestID, err
}

// TriggerStop is POST /jobs/:id/stop; it returns the request id.
func (c *Client) TriggerStop(ctx context.Context, id, dir string, drain bool) (string, error) {
	var r TriggerResponse
	err := c.do(ctx, http.MethodPost, jobPath(id, "stop"), StopRequest{TargetDirectory: dir, Drain: drain}, &r)
	return r.RequestID, err
}

// Status is GET /jobs/:id/savepoints/:rid; wait > 0 asks the server to
// answer as soon as the operation completed, or after wait.
func (c *Client) Status(ctx context.Context, id, rid string, wait time.Duration) (AsyncStatus, error) {
	var st AsyncStatus
	p := jobPath(id, "savepoints", rid)
	if wait > 0 {
		p += "?wait=" + url.QueryEscape(wait.String())
	}
	err := c.do(ctx, http.MethodGet, p, nil, &st)
	return st, err
}

// Await waits until a savepoint or stop request completed and returns the
// savepoint's location, or its failure as an error.
func (c *Client) Await(ctx context.Context, id, rid string) (string, error) {
	for {
		st, err := c.Status(ctx, id, rid, 30*time.Second)
		if err != nil {
			return "", err
		}
		if st.Status.ID != Completed {
			if err := ctx.Err(); err != nil {
				return "", err
			}
			continue
		}
		if st.Operation == nil {
			return "", errors.New("the server reported no outcome")
		}
		if fc := st.Operation.FailureCause; fc != nil {
			return "", errors.New(fc.StackTrace)
		}
		return st.Operation.Location, nil
	}
}

// ClientFor returns a client for a registered process. token is sent only
// to a process that requires one; a missing or wrong token is an error
// (checked against the entry's hash, before anything is sent).
func ClientFor(e Entry, token string) (*Client, error) {
	if !e.NeedsToken() {
		return &Client{URL: e.URL}, nil
	}
	if token == "" {
		return nil, fmt.Errorf("process %d requires a REST token: set %s to its rest.token", e.PID, TokenEnv)
	}
	if !e.TokenMatches(token) {
		return nil, fmt.Errorf("process %d: %s is not its rest.token", e.PID, TokenEnv)
	}
	return &Client{URL: e.URL, Token: token}, nil
}

// Process is a registered process and the jobs its API reported.
type Process struct {
	Entry Entry
	Jobs  []JobOverview
	Err   error // the API could not be asked or did not answer
}

// Discover asks every live process of the registry for its jobs, in
// parallel; the result is ordered by pid.
func Discover(ctx context.Context, r *Registry, token string) ([]Process, error) {
	entries, err := r.List()
	if err != nil {
		return nil, err
	}
	out := make([]Process, len(entries))
	var wg sync.WaitGroup
	for i, e := range entries {
		out[i].Entry = e
		c, err := ClientFor(e, token)
		if err != nil {
			out[i].Err = err
			continue
		}
		wg.Add(1)
		go func(p *Process) {
			defer wg.Done()
			p.Jobs, p.Err = c.Overview(ctx)
			if p.Err != nil {
				p.Err = fmt.Errorf("process %d (%s) did not answer: %w", p.Entry.PID, p.Entry.URL, p.Err)
			}
		}(&out[i])
	}
	wg.Wait()
	return out, nil
}

// FindJob finds the process that runs job id (its full id, or a prefix
// that matches exactly one job) and returns a client for it and the job.
func FindJob(ctx context.Context, r *Registry, token, id string) (*Client, Process, JobOverview, error) {
	procs, err := Discover(ctx, r, token)
	if err != nil {
		return nil, Process{}, JobOverview{}, err
	}
	type hit struct {
		p Process
		j JobOverview
	}
	var exact, prefix []hit
	var problems []string
	for _, p := range procs {
		if p.Err != nil {
			problems = append(problems, p.Err.Error())
			continue
		}
		for _, j := range p.Jobs {
			switch {
			case j.ID == id:
				exact = append(exact, hit{p, j})
			case id != "" && strings.HasPrefix(j.ID, id):
				prefix = append(prefix, hit{p, j})
			}
		}
	}
	hits := exact
	if len(hits) == 0 {
		hits = prefix
	}
	switch {
	case len(hits) == 1:
		c, _ := ClientFor(hits[0].p.Entry, token)
		return c, hits[0].p, hits[0].j, nil
	case len(hits) > 1:
		var ids []string
		for _, h := range hits {
			ids = append(ids, h.j.ID)
		}
		sort.Strings(ids)
		return nil, Process{}, JobOverview{}, fmt.Errorf("job id '%s' is ambiguous: it matches %s", id, strings.Join(ids, ", "))
	}
	msg := fmt.Sprintf("no local streamsql process runs job '%s' ('streamsql list' shows the jobs)", id)
	if len(procs) == 0 {
		msg = fmt.Sprintf("no job '%s': no streamsql process is running on this machine (registry %s)", id, r.Dir)
	}
	if len(problems) > 0 {
		msg += "; " + strings.Join(problems, "; ")
	}
	return nil, Process{}, JobOverview{}, errors.New(msg)
}
