package diskq

// Open counts what damage took by item numbers. Every item written gets the next number
// (q.nextNum), and a record's header holds its first item's; so between two intact records,
// whatever lies between them, exactly num(after) - end(before) items are missing. The
// position file adds two more references: the number of the head's item, for damage right
// at the head, and the claim, the number after the last item written as of the last
// position write (every Ack, every sync, Close), for damage at the end of the newest
// segment, where no intact record follows. Only where no reference is known (records of
// format 1, a lost position, writes after the last claim) does a region fall back to what
// its own header says, or count as unknown.

// tally is what Open's scan carries from one record to the next, across segments.
type tally struct {
	expect  int64     // the number of the next item not accounted for; -1 when unknown
	group   []damage  // damaged regions since the last intact record, not yet reported
	headSet bool      // the head's item number is set (the first intact record after it)
	claim   int64     // the position's claim, -1 when unknown
	sum     *Recovery // where the reports are summed
}

// damage is a damaged region that Open found, in the segment file named file.
type damage struct {
	file string
	f    found
}

func newTally(p position, ok bool, rec *Recovery) *tally {
	t := &tally{expect: -1, claim: -1, sum: rec}
	if ok {
		t.expect, t.claim = p.num, p.claim
	}
	return t
}

// intact accounts for an intact record f, of which the first skip items were consumed
// before the last stop: what is missing before it is reported, and counting goes on after
// it.
func (q *Queue) intact(t *tally, file string, f found, skip int) {
	at := int64(-1)
	if f.h.num >= 0 {
		at = f.h.num + int64(skip)
	}
	q.settle(t, file, f.off, at)
	t.expect = f.h.end()
	if !t.headSet {
		t.headSet = true
		q.head.num = at
	}
}

// settle reports the damaged regions since the last intact record, now that the next
// reference number, at, is known (-1 when it is not): they held exactly at - t.expect items.
// A gap in the numbers with no damaged bytes (a segment file gone) is reported at off of
// file. Without both references each region counts by its own header, or as unknown.
func (q *Queue) settle(t *tally, file string, off, at int64) {
	group := t.group
	t.group = nil
	var known int64
	for _, d := range group {
		if d.f.known {
			known += int64(d.f.h.items)
		}
	}
	if t.expect < 0 || at < 0 || at-t.expect < known {
		for _, d := range group {
			q.reportCorrupt(d.file, d.f, &t.sum.Corrupt)
		}
		return
	}
	lost := at - t.expect
	if len(group) == 0 {
		if lost > 0 {
			q.report(Corruption{File: file, Offset: off, Items: lost}, &t.sum.Corrupt)
		}
		return
	}
	// Regions with a readable header hold what it says; the rest of the loss goes to the
	// first region without one (a region whose header is unreadable starts with it), or to
	// the last.
	rest := lost - known
	taker := len(group) - 1
	for i, d := range group {
		if !d.f.known {
			taker = i
			break
		}
	}
	for i, d := range group {
		c := Corruption{File: d.file, Offset: d.f.off, Bytes: d.f.end - d.f.off}
		if d.f.known {
			c.Records, c.Items = 1, int64(d.f.h.items)
		}
		if i == taker {
			c.Items += rest
		}
		q.report(c, &t.sum.Corrupt)
	}
}

// finish reports what is missing at the end of the newest segment against the claim, and
// sets the numbers the queue goes on from. The numbers of what was cut off the end are
// given again, so that the next Open does not count it twice.
func (q *Queue) finish(t *tally) {
	next := t.expect
	q.settle(t, segmentName(q.tail().id), q.tail().size, t.claim)
	if next < 0 {
		next = max(t.claim, 0)
	}
	q.nextNum, q.claimed = next, -1
	if !t.headSet {
		q.head.num = next
	}
}

// claim records the number after the last item written in the position file, when it
// changed since the last write: Open counts what the newest segment lacks by it.
func (q *Queue) claim() error {
	if q.nextNum == q.claimed {
		return nil
	}
	return q.writePosition()
}

// writePosition writes the head and the claim.
func (q *Queue) writePosition() error {
	q.posDirty = true
	err := q.posf.write(position{seg: q.head.seg, off: q.head.off, skip: q.head.skip,
		num: q.head.num, claim: q.nextNum})
	if err == nil {
		q.claimed = q.nextNum
	}
	return err
}
