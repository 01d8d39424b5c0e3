package graphitetemplate

import (
	"slices"
	"strings"
)

// node is one part of the filters: its children ordered by value with the wildcard "*"
// last, and the template of the filter that ends here.
type node struct {
	separator string // of the root only: what paths are split with
	value     string
	children  []*node
	template  *Template
}

// insert adds the filter made of parts, ending with t; a filter given twice keeps the
// template added last.
func (n *node) insert(parts []string, t *Template) {
	for len(parts) > 0 {
		i := slices.IndexFunc(n.children, func(c *node) bool { return c.value == parts[0] })
		if i < 0 {
			n.children = append(n.children, &node{value: parts[0]})
			slices.SortStableFunc(n.children, compareNodes)
			i = slices.IndexFunc(n.children, func(c *node) bool { return c.value == parts[0] })
		}
		n, parts = n.children[i], parts[1:]
	}
	n.template = t
}

// compareNodes orders values as strings, but "*" after every other.
func compareNodes(a, b *node) int {
	switch {
	case a.value == b.value:
		return 0
	case a.value == "*":
		return 1
	case b.value == "*":
		return -1
	}
	return strings.Compare(a.value, b.value)
}

// search finds the template for a path split into parts: an exact part is tried first and,
// when nothing below it matches, the wildcard; when no child matches, this node's own
// template. As in Telegraf, a path that takes the wildcard gets what is found below it,
// even nothing, rather than this node's template.
func (n *node) search(parts []string) *Template {
	if len(parts) == 0 || len(n.children) == 0 {
		return n.template
	}
	exact := n.children
	wild := exact[len(exact)-1].value == "*"
	if wild {
		exact = exact[:len(exact)-1]
	}
	if i, found := slices.BinarySearchFunc(exact, parts[0], func(c *node, v string) int {
		return strings.Compare(c.value, v)
	}); found {
		if t := exact[i].search(parts[1:]); t != nil {
			return t
		}
	}
	if wild {
		return n.children[len(n.children)-1].search(parts[1:])
	}
	return n.template
}
