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
