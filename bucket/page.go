package bucket

import (
	"fmt"
	"sort"
	"strings"
)

// ListSorted computes one page of a listing from every object an adapter
// holds under opts.Prefix, sorted by key. Adapters that keep their own
// index (mem, file) share it so that prefix, delimiter, start-after and
// paging mean the same everywhere.
//
// Its page tokens are the last entry of the page, tagged "k" for a key and
// "p" for a folded prefix (which covers every key under it).
func ListSorted(sorted []Attrs, opts ListOptions) (ListPage, error) {
	after, skipPrefix := opts.StartAfter, ""
	if tok := opts.PageToken; tok != "" {
		switch tok[0] {
		case 'k':
			after = max(after, tok[1:])
		case 'p':
			after, skipPrefix = max(after, tok[1:]), tok[1:]
		default:
			return ListPage{}, fmt.Errorf("%w: bad page token", ErrInvalidKey)
		}
	}
	n := PageSize(opts.PageSize)
	i := max(sort.Search(len(sorted), func(i int) bool { return sorted[i].Key > after }),
		sort.Search(len(sorted), func(i int) bool { return sorted[i].Key >= opts.Prefix }))
	var page ListPage
	last, lastIsPrefix := "", false
	for ; i < len(sorted); i++ {
		a := sorted[i]
		if !strings.HasPrefix(a.Key, opts.Prefix) {
			break
		}
		if skipPrefix != "" && strings.HasPrefix(a.Key, skipPrefix) {
			continue
		}
		if opts.Delimiter != "" {
			rest := a.Key[len(opts.Prefix):]
			if j := strings.Index(rest, opts.Delimiter); j >= 0 {
				p := opts.Prefix + rest[:j+len(opts.Delimiter)]
				if lastIsPrefix && p == last {
					continue
				}
				if len(page.Objects)+len(page.Prefixes) == n {
					page.NextPageToken = token(last, lastIsPrefix)
					return page, nil
				}
				page.Prefixes = append(page.Prefixes, p)
				last, lastIsPrefix = p, true
				skipPrefix = p
				continue
			}
		}
		if len(page.Objects)+len(page.Prefixes) == n {
			page.NextPageToken = token(last, lastIsPrefix)
			return page, nil
		}
		page.Objects = append(page.Objects, a)
		last, lastIsPrefix = a.Key, false
	}
	return page, nil
}

func token(last string, isPrefix bool) string {
	if isPrefix {
		return "p" + last
	}
	return "k" + last
}
