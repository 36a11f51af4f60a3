package ui

// Pager is the paging of a list page: which rows of how many it shows and the links to
// the pages before and after. List data embeds it; templates show it with
// {{template "pagination" .}}.
type Pager struct {
	Total int
	// First and Last number the rows shown, from 1; both 0 when none is shown.
	First, Last      int
	PrevURL, NextURL string
}

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
	return p
}
