package sqltests

import "strings"

// lineDiff renders the difference between expected and actual line by line
// ("-" expected only, "+" actual only, " " both), from a longest common
// subsequence. Outputs are small, so the quadratic table is fine.
func lineDiff(expected, actual string) string {
	a := splitLines(expected)
	b := splitLines(actual)
	// lcs[i][j] = LCS length of a[i:], b[j:]
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var sb strings.Builder
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			sb.WriteString("    " + a[i] + "\n")
			i++
			j++
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			sb.WriteString("  + " + b[j] + "\n")
			j++
		default:
			sb.WriteString("  - " + a[i] + "\n")
			i++
		}
	}
	return sb.String()
}
