// Package checkpoint will own the checkpoint coordinator, barrier ids, the
// Pebble state store, key encoding, the on-disk layout, restore and
// savepoints (issue 3). It must never import exec or planner; exec depends
// on small interfaces defined here.
package checkpoint
