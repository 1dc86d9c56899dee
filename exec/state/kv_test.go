package state

import (
	"fmt"
	"strings"
	"testing"
)

// TestKVValueMapListState: value, map and list state in namespaces on one
// KV, checkpointed and restored.
func TestKVValueMapListState(t *testing.T) {
	kv, err := NewKV(Options{OpID: "join", MaxParallelism: 4, Checkpointing: true})
	if err != nil {
		t.Fatal(err)
	}
	var k []byte
	kv.Put(1, Key(k, []byte("left"), []byte("u1")), []byte("v-left"))
	kv.Put(1, Key(k, []byte("right"), []byte("u1")), []byte("v-right"))
	kv.Put(2, Key(k, []byte("win"), []byte("u2"), []byte("t10")), []byte("3"))
	kv.Put(2, Key(k, []byte("win"), []byte("u2"), []byte("t20")), []byte("4"))
	kv.Append(3, Key(k, []byte("rows"), []byte("u3")), []byte("a"))
	kv.Append(3, Key(k, []byte("rows"), []byte("u3")), []byte("bb"))
	if v, ok := kv.Get(1, Key(nil, []byte("left"), []byte("u1"))); !ok || string(v) != "v-left" {
		t.Fatalf("left: %q %v", v, ok)
	}
	var m []string
	_ = kv.Scan(2, Key(nil, []byte("win"), []byte("u2")), func(k, v []byte) error {
		m = append(m, string(v))
		return nil
	})
	if strings.Join(m, ",") != "3,4" {
		t.Fatalf("map scan: %v", m)
	}
	rec := &recorder{s: store{}}
	if err := kv.Snapshot(1, rec); err != nil {
		t.Fatal(err)
	}
	committed := store{}
	replay(committed, rec)
	kv2, _ := NewKV(Options{OpID: "join", MaxParallelism: 4, Checkpointing: true})
	if err := kv2.Restore(scanStore(committed), 0, 4); err != nil {
		t.Fatal(err)
	}
	var list []string
	if err := kv2.List(-1, Key(nil, []byte("rows"), []byte("u3")), func(e []byte) error {
		list = append(list, string(e))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(list) != "[a bb]" || kv2.Len() != 5 {
		t.Fatalf("restored list %v, %d keys", list, kv2.Len())
	}
	kv2.Delete(1, Key(nil, []byte("right"), []byte("u1")))
	if _, ok := kv2.Get(1, Key(nil, []byte("right"), []byte("u1"))); ok || kv2.Len() != 4 {
		t.Fatal("delete")
	}
}
