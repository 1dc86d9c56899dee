package catalog

import (
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
