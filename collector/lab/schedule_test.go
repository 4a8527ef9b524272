package lab

import (
	"slices"
	"testing"
)

func TestSchedule(t *testing.T) {
	for _, tc := range []struct {
		planned, want []int
	}{
		{nil, []int{}},
		{[]int{2, 2}, []int{0, 1, 0, 1}},
		{[]int{1, 3, 0}, []int{0, 1, 1, 1}},
		{[]int{2, 4, 1}, []int{0, 1, 2, 0, 1, 1, 1}},
	} {
		if got := Schedule(tc.planned); !slices.Equal(got, tc.want) {
			t.Errorf("Schedule(%v) = %v, want %v", tc.planned, got, tc.want)
		}
	}
}
