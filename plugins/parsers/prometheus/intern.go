package prometheus

import "strings"

// interner keeps one copy of each label name and value a payload has, for the payloads
// after it: a target serves the same labels at every scrape, so its lines are only looked
// at and the metrics share the strings, rather than each line being copied for the
// labels cut from it.
type interner map[string]string

// maxInterned bounds an interner; past it, it forgets them all (a target whose label
// values change at every scrape gains nothing from it).
const maxInterned = 1 << 16

func (p *Parser) interner() *interner {
	if in, ok := p.interners.Get().(*interner); ok {
		return in
	}
	in := interner{}
	return &in
}

// intern returns s, which may point into the payload, as a string of its own.
func (in *interner) intern(s string) string {
	if v, ok := (*in)[s]; ok {
		return v
	}
	if len(*in) >= maxInterned {
		clear(*in)
	}
	v := strings.Clone(s)
	(*in)[v] = v
	return v
}
