package ui

import (
	"net/url"
	"strconv"
)

// Pager is the paging of a list page: which rows of how many it shows and the links to
// the pages before and after. List data embeds it; templates show it with
// {{template "pagination" .}}.
type Pager struct {
	Total int
	// First and Last number the rows shown, from 1; both 0 when none is shown.
	First, Last      int
	PrevURL, NextURL string
	// Pages link the first and last pages and those around the current one; a zero
	// Number marks a gap. Empty for a list that fits one page.
	Pages []PageLink
}

// PageLink is one numbered page of a list.
type PageLink struct {
	Number  int
	URL     string
	Current bool
}

// pageWindow is how many pages either side of the current one are linked.
const pageWindow = 2

// newPager pages a list of total rows that shows shown rows from offset, size to a page;
// url gives the link of the page at an offset.
func newPager(offset, shown, total, size int, url func(offset int) string) Pager {
	p := Pager{Total: total}
	if shown > 0 {
		p.First, p.Last = offset+1, offset+shown
	}
	if offset > 0 {
		p.PrevURL = url(max(offset-size, 0))
	}
	if offset+shown < total {
		p.NextURL = url(offset + size)
	}
	p.Pages = pageLinks(offset, total, size, url)
	return p
}

// pageOffset reads a list page's offset from q; a bad one is noted in errs and reads 0.
func pageOffset(q url.Values, errs map[string]string) int {
	v := q.Get("offset")
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		errs["offset"] = "The page offset is a whole number, 0 or more."
		return 0
	}
	return n
}

// pageLinks numbers the pages of total rows, size to a page, with the current one (the
// page holding offset) among them.
func pageLinks(offset, total, size int, url func(offset int) string) []PageLink {
	if size <= 0 || total <= size {
		return nil
	}
	last := (total + size - 1) / size
	current := offset/size + 1
	var out []PageLink
	for n := 1; n <= last; n++ {
		if n != 1 && n != last && (n < current-pageWindow || n > current+pageWindow) {
			if out[len(out)-1].Number != 0 {
				out = append(out, PageLink{})
			}
			continue
		}
		out = append(out, PageLink{Number: n, URL: url((n - 1) * size), Current: n == current})
	}
	return out
}
