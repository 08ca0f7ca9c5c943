// Package tree stores a sorted map of byte keys to byte values as a
// tree of immutable, content-addressed nodes whose boundaries the keys
// decide, so that two versions of a large map share every node their
// changes did not touch.
//
// A Workbench commit freezes its members this way: a commit whose tree
// differs from its parent's in k files writes the k files' leaves and
// their ancestors, about (k + 1) × log32(n) nodes, instead of a row per
// file. The root's content digest depends only on the entries, so it is
// the commit's member digest. The format is in node.go; docs/workbench.md
// ("Member trees") gives the reasons.
package tree
