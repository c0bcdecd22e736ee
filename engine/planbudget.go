package engine

// fitBudgets works out the share of each instance's work its budgets allow:
// instances naming the same budget share what is left of it in proportion
// to what each would spend.
func fitBudgets(drafts []*draft) {
	type pool struct {
		left, need float64
		users      int
	}
	pools := map[any]*pool{}
	for _, d := range drafts {
		for _, l := range d.work.Limits {
			p := pools[l.Budget]
			if p == nil {
				p = &pool{left: l.Left}
				pools[l.Budget] = p
			}
			p.need += l.Need
			p.users++
		}
	}
	for _, d := range drafts {
		for _, l := range d.work.Limits {
			p := pools[l.Budget]
			if p.need > 0 && p.left/p.need < d.allowed {
				d.allowed, d.limitedBy = p.left/p.need, l.What
			}
			d.shared = d.shared || p.users > 1
		}
	}
}
