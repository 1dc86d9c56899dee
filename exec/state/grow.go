package state

// Grow returns s extended to length n with fill in the new elements (s
// itself when it is that long already). Its capacity at least doubles
// when it must move, so a per-slot column that grows with its table copies
// each element about once (append's growth of a quarter for large slices
// copies each about four times).
func Grow[T any](s []T, n int, fill T) []T {
	if n <= len(s) {
		return s
	}
	if n > cap(s) {
		c := max(n, 2*cap(s), 64)
		ns := make([]T, len(s), c)
		copy(ns, s)
		s = ns
	}
	old := len(s)
	s = s[:n]
	for i := old; i < n; i++ {
		s[i] = fill
	}
	return s
}

// slotStep is the number of slots a table adds when its free list is
// empty: at least 64, an eighth of what it has otherwise (the operator's
// columns grow once per step instead of once per new key).
func slotStep(n int) int { return max(64, n/8) }
