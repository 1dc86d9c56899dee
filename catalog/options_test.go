package catalog

import (
	"os"
	"strings"
	"testing"
)

func TestSecretOptionsAreMasked(t *testing.T) {
	o := NewOptions()
	if err := o.Set("rest.token", "s3cret-token-0123456789"); err != nil {
		t.Fatal(err)
	}
	for _, kv := range o.List() {
		if kv[0] == "rest.token" && kv[1] != "s3cr****" {
			t.Fatalf("SET lists rest.token as %q", kv[1])
		}
	}
	if o.Get("rest.token") != "s3cret-token-0123456789" {
		t.Fatal("the value itself must be kept")
	}
	err := o.Set("rest.token", "short-secret")
	if err == nil || strings.Contains(err.Error(), "short-secret") {
		t.Fatalf("error repeats the secret: %v", err)
	}
}

// Key groups are kept in 16 bits: pipeline.max-parallelism is capped at
// Flink's 32768, and the error names the key and the value.
func TestMaxParallelismBound(t *testing.T) {
	o := NewOptions()
	for _, v := range []string{"1", "128", "32768"} {
		if err := o.Set("pipeline.max-parallelism", v); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
	for _, v := range []string{"0", "32769", "65537", "100000", "x"} {
		err := o.Set("pipeline.max-parallelism", v)
		if err == nil || !strings.Contains(err.Error(), "'pipeline.max-parallelism'") || !strings.Contains(err.Error(), "'"+v+"'") || !strings.Contains(err.Error(), "32768") {
			t.Errorf("%s: want an error naming the key, the value and the bound, got %v", v, err)
		}
	}
	if got := o.Int("pipeline.max-parallelism"); got != 32768 {
		t.Errorf("a refused value changed the option: %d", got)
	}
}

func TestRestoreFallbackOption(t *testing.T) {
	o := NewOptions()
	if got := o.Get("execution.checkpointing.restore-fallback"); got != "false" {
		t.Fatalf("default %q", got)
	}
	if err := o.Set("execution.checkpointing.restore-fallback", "maybe"); err == nil || !strings.Contains(err.Error(), "true, false") {
		t.Fatalf("bad value accepted: %v", err)
	}
	if err := o.Set("execution.checkpointing.restore-fallback", "TRUE"); err != nil {
		t.Fatal(err)
	}
}

// TestFlinkOnlyOptions: Flink keys that streamsql does not act on are
// accepted with one warning per key, keep their value (SET lists it), and
// still have their values checked; a near miss still suggests.
func TestFlinkOnlyOptions(t *testing.T) {
	o := NewOptions()
	for _, kv := range [][2]string{
		{"table.exec.mini-batch.enabled", "true"},
		{"table.exec.mini-batch.allow-latency", "5 s"},
		{"table.exec.mini-batch.size", "5000"},
		{"table.exec.source.cdc-events-duplicate", "true"},
		{"table.optimizer.join-reorder-enabled", "true"},
		{"table.exec.sink.not-null-enforcer", "drop"},
	} {
		notice, err := o.SetNotice(kv[0], kv[1])
		if err != nil {
			t.Fatalf("SET %s: %v", kv[0], err)
		}
		if !strings.Contains(notice, "does not act on it") || !strings.Contains(notice, kv[0]) {
			t.Errorf("SET %s: notice %q", kv[0], notice)
		}
		if notice, _ := o.SetNotice(kv[0], kv[1]); notice != "" {
			t.Errorf("SET %s again: a second notice %q", kv[0], notice)
		}
		if o.Get(kv[0]) != kv[1] {
			t.Errorf("Get(%s) = %q", kv[0], o.Get(kv[0]))
		}
	}
	listed := map[string]string{}
	for _, kv := range o.List() {
		listed[kv[0]] = kv[1]
	}
	if listed["table.exec.source.cdc-events-duplicate"] != "true" {
		t.Errorf("SET does not list table.exec.source.cdc-events-duplicate: %v", listed)
	}
	if _, ok := listed["table.exec.emit.allow-lateness"]; ok {
		t.Error("SET lists a Flink-only key that was never set")
	}
	if err := o.Reset("table.exec.source.cdc-events-duplicate"); err != nil || o.IsSet("table.exec.source.cdc-events-duplicate") {
		t.Errorf("RESET: %v", err)
	}
	for _, bad := range [][2]string{
		{"table.exec.mini-batch.enabled", "yes"},
		{"table.exec.source.idle-timeout", "forever"},
		{"table.exec.sink.not-null-enforcer", "IGNORE"},
	} {
		if err := o.Set(bad[0], bad[1]); err == nil || !strings.Contains(err.Error(), "invalid value '"+bad[1]+"'") {
			t.Errorf("SET %s = %s: %v", bad[0], bad[1], err)
		}
	}
	err := o.Set("table.exec.mini-batch.enable", "true")
	if err == nil || !strings.Contains(err.Error(), "did you mean 'table.exec.mini-batch.enabled'?") {
		t.Errorf("near miss: %v", err)
	}
	for _, k := range exactIgnoredKeys() {
		if _, ok := lookupDef(k); ok {
			t.Errorf("%s is both acted on and ignored", k)
		}
	}
}

// TestFlinkOnlyOptionsDocumented: docs/sql.md lists every key accepted
// without effect.
func TestFlinkOnlyOptionsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/sql.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range IgnoredOptionKeys() {
		if !strings.Contains(string(doc), "`"+k+"`") {
			t.Errorf("docs/sql.md does not list `%s`", k)
		}
	}
}
