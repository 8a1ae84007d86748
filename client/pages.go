package client

import "iter"

// pages yields the pages of a list, from the one at first on: fetch
// returns the page at a position, the position of the next page and
// whether there is one. It stops at the first error, which it yields with
// a zero page, and when the caller stops.
func pages[P, Pos any](first Pos, fetch func(Pos) (P, Pos, bool, error)) iter.Seq2[P, error] {
	return func(yield func(P, error) bool) {
		for pos := first; ; {
			p, next, more, err := fetch(pos)
			if err != nil {
				var zero P
				yield(zero, err)
				return
			}
			if !yield(p, nil) || !more {
				return
			}
			pos = next
		}
	}
}

// items yields the items of the pages ps, page after page, of returning a
// page's items. It stops at the first error, which it yields with a zero
// item, and when the caller stops (no further page is fetched).
func items[T, P any](ps iter.Seq2[P, error], of func(P) []T) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for p, err := range ps {
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range of(p) {
				if !yield(it, nil) {
					return
				}
			}
		}
	}
}

// offsetPage is what an offset-paged list's fetch tells pages: the page,
// the offset after it, and whether another page may follow. A page that
// brings nothing ends the walk, so a list that stops growing, or a server
// that keeps answering empty pages, cannot loop for ever.
func offsetPage[P any](p P, offset, n int, more bool) (P, int, bool, error) {
	return p, offset + n, n > 0 && more, nil
}
