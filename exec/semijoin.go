package exec

// Semi and anti joins, Flink's StreamingSemiAntiJoinOperator: the output
// is the left rows. The left state keeps each row's number of matches on
// the right (numOfAssociations); a right row arriving or leaving emits or
// retracts the left rows whose count leaves or reaches zero.

// semiLeft processes a batch of the left side: a left row is emitted with
// its own row kind when it has a match (semi) or none (anti).
func (j *streamJoin) semiLeft(in *joinSideState, b Batch, n int) {
	for i := 0; i < n; i++ {
		kind := b.Op(i)
		matched := int64(0)
		for p := j.pairOff[i]; p < j.pairOff[i+1]; p++ {
			if j.pass[p] {
				matched += j.cands[j.pairCand[p]].count
			}
		}
		if (matched > 0) != j.anti {
			j.out(kind, int32(i), -1)
		}
		if kind.IsAdd() {
			j.addOwn(in, i, matched)
		} else {
			j.retractOwn(in, i)
		}
	}
}

// semiRight processes a batch of the right side. A right accumulate gives
// a left row its first match: semi emits it with the right row's kind
// (+I/+U), anti retracts it (-D). A right retraction takes a left row's
// last match: semi retracts it with the right row's kind (-U/-D), anti
// emits it again (+I).
func (j *streamJoin) semiRight(in *joinSideState, b Batch, n int) {
	for i := 0; i < n; i++ {
		kind := b.Op(i)
		add := kind.IsAdd()
		if add {
			j.addOwn(in, i, 0)
		} else {
			j.retractOwn(in, i)
		}
		for p := j.pairOff[i]; p < j.pairOff[i+1]; p++ {
			if !j.pass[p] {
				continue
			}
			ci := j.pairCand[p]
			c := &j.cands[ci]
			for k := int64(0); k < c.count; k++ {
				switch {
				case add && c.assoc == 0 && j.anti:
					j.out(Delete, -1, ci)
				case add && c.assoc == 0:
					j.out(kind, -1, ci)
				case !add && c.assoc == 1 && j.anti:
					j.out(Insert, -1, ci)
				case !add && c.assoc == 1:
					j.out(kind, -1, ci)
				}
			}
			if add {
				c.assoc++
			} else {
				c.assoc--
			}
			c.dirty = true
		}
	}
}
