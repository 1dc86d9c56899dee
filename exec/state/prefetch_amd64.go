package state

// prefetch asks the CPU to bring the cache line at addr into its caches
// without waiting for it (PREFETCHT0; a bad address is ignored). A Go
// load of the line instead stalls the code that uses it, and a chain of
// such loads keeps the core from running ahead.
//
//go:noescape
func prefetch(addr uintptr)
