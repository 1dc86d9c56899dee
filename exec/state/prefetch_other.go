//go:build !amd64

package state

// prefetch does nothing where the package has no assembly for it.
func prefetch(addr uintptr) {}
