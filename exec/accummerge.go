package exec

// Merging accumulator states: a hopping or cumulating window is the union
// of its slices (panes), and merging session windows unions their states.
// mergeFrom is called per window and slice, never per row; src is always an
// accumulator of the same aggregate, so the type assertion cannot fail.

func (a *countAcc) mergeFrom(g int32, src accumulator, s int32) {
	a.n[g] += src.(*countAcc).n[s]
}

func (a *sumAcc[I, S]) mergeFrom(g int32, src accumulator, s int32) {
	o := src.(*sumAcc[I, S])
	a.sum[g] += o.sum[s]
	a.nn[g] += o.nn[s]
}

func (a *decSumAcc) mergeFrom(g int32, src accumulator, s int32) {
	o := src.(*decSumAcc)
	a.sum[g] = a.sum[g].Add(o.sum[s])
	a.nn[g] += o.nn[s]
}

func (a *minMax[T]) mergeFrom(g int32, src accumulator, s int32) {
	o := src.(*minMax[T])
	if o.has[s] && (!a.has[g] || a.better(o.val[s], a.val[g])) {
		a.val[g], a.has[g] = o.val[s], true
	}
	if a.retract {
		a.multi[g].mergeFrom(&o.multi[s])
	}
}

func (a *distinctCount[T]) mergeFrom(g int32, src accumulator, s int32) {
	var o *distinctCount[T]
	switch x := src.(type) {
	case *distinctCount[T]:
		o = x
	case *distinctDouble:
		o = any(&x.distinctCount).(*distinctCount[T])
	}
	a.sets[g].mergeFrom(&o.sets[s])
}
