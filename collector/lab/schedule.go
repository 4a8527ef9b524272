package lab

// Schedule is the order of a pass's visits: round-robin over the regions,
// planned[i] visits of region i, so that every region's visits spread over
// the pass (a slow moment of the machine hits them all alike) and a region
// with more visits carries on alone after the others. It returns region
// indices.
func Schedule(planned []int) []int {
	most, total := 0, 0
	for _, n := range planned {
		most, total = max(most, n), total+max(n, 0)
	}
	order := make([]int, 0, total)
	for round := range most {
		for i, n := range planned {
			if round < n {
				order = append(order, i)
			}
		}
	}
	return order
}
