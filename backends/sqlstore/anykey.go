package sqlstore

import "context"

// AnyKey reports whether any API key exists, of any user and role,
// disabled ones included: `gateway serve` offers the console's first-run
// link only while there is none.
func (s *Store) AnyKey(ctx context.Context) (_ bool, err error) {
	defer s.classify(&err)
	var n int
	err = s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM api_keys LIMIT 1) AS one`).Scan(&n)
	return n > 0, err
}
