package exec

import "testing"

// TestEdgeWatermark: an input's watermark is the minimum over its active
// channels; idle channels hold nothing back unless every channel of the
// input is idle (then the largest idle one), ended channels never count,
// and channels of the other input are ignored.
func TestEdgeWatermark(t *testing.T) {
	chanInput := []int{0, 0, 0, 1}
	cases := []struct {
		name        string
		wm          []int64
		idle, ended []bool
		in          int
		want        int64
	}{
		{"all active", []int64{5, 3, 9, 1}, []bool{false, false, false, false}, []bool{false, false, false, false}, 0, 3},
		{"idle behind", []int64{5, 3, 9, 1}, []bool{false, true, false, false}, []bool{false, false, false, false}, 0, 5},
		{"all idle", []int64{5, 3, 9, 1}, []bool{true, true, true, false}, []bool{false, false, false, false}, 0, 9},
		{"idle and ended", []int64{5, 3, 9, 1}, []bool{false, true, false, false}, []bool{true, false, true, false}, 0, 3},
		{"ended", []int64{5, 3, 9, 1}, []bool{false, false, false, false}, []bool{true, true, false, false}, 0, 9},
		{"all ended", []int64{5, 3, 9, 1}, []bool{false, false, false, false}, []bool{true, true, true, false}, 0, MaxWatermark},
		{"final and idle", []int64{MaxWatermark, 3, 9, 1}, []bool{false, true, true, false}, []bool{false, false, false, false}, 0, MaxWatermark},
		{"other input", []int64{5, 3, 9, 1}, []bool{true, true, true, false}, []bool{false, false, false, false}, 1, 1},
	}
	for _, c := range cases {
		if got := edgeWatermark(c.in, chanInput, c.wm, c.idle, c.ended); got != c.want {
			t.Errorf("%s: got %d, want %d", c.name, got, c.want)
		}
	}
}
