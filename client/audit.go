package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/url"
	"strconv"
	"time"
)

// AuditQuery selects the entries of the audit log Audit returns; the zero
// value is every entry of the user, newest first, a page of the gateway's
// default size.
type AuditQuery struct {
	// Target is the id of what was acted on: a key's hash, a provider
	// key's or a workspace's id.
	Target string
	// Actor is the hash of the acting key.
	Actor string
	// Action is one of the recorded actions ("key.disable", ...).
	Action string
	// Since keeps the entries recorded at or after it; zero: all.
	Since time.Time
	// Cursor continues a listing: the Cursor of the previous page.
	Cursor string
	// Limit is the page's size, 1 to 200; 0: the gateway's default (50).
	Limit int
}

// AuditEntry is one management action: who did what to which target,
// when, through which route, console page or command, and what changed.
type AuditEntry struct {
	ID      string        `json:"id"`
	At      time.Time     `json:"at"`
	Action  string        `json:"action"`
	Target  string        `json:"target"`
	Actor   AuditActor    `json:"actor"`
	Changes []AuditChange `json:"changes"`
}

// AuditActor is the acting side of an entry.
type AuditActor struct {
	// KeyHash is the acting key; "" for the CLI and the gateway itself.
	KeyHash string `json:"key_hash"`
	UserID  string `json:"user_id"`
	// Via is the API route ("PATCH /api/v1/keys/{hash}"), the console's
	// page ("console POST /console/sign-in") or the CLI command
	// ("cli keys disable").
	Via        string `json:"via"`
	ClientAddr string `json:"client_addr"`
	RequestID  string `json:"request_id"`
}

// AuditChange is one field an action touched, its values before and after
// as JSON ("null": none). A secret's change is recorded with both null.
type AuditChange struct {
	Field string          `json:"field"`
	Old   json.RawMessage `json:"old"`
	New   json.RawMessage `json:"new"`
}

// AuditPage is one page of the audit log, newest first.
type AuditPage struct {
	Entries []AuditEntry `json:"data"`
	HasMore bool         `json:"has_more"`
	// Cursor fetches the next page; nil on the last one.
	Cursor *string `json:"cursor"`
}

// Audit returns one page of the user's audit log (a management key's
// call).
func (c *Client) Audit(ctx context.Context, q AuditQuery) (*AuditPage, error) {
	query := url.Values{}
	for name, v := range map[string]string{"target": q.Target, "actor": q.Actor, "action": q.Action, "cursor": q.Cursor} {
		if v != "" {
			query.Set(name, v)
		}
	}
	if !q.Since.IsZero() {
		query.Set("since", q.Since.UTC().Format(time.RFC3339))
	}
	if q.Limit > 0 {
		query.Set("limit", strconv.Itoa(q.Limit))
	}
	return get[AuditPage](ctx, c, "/audit", query)
}

// AuditEntries yields every entry of the user's audit log that q selects,
// newest first, from q.Cursor on, fetching a page of q.Limit at a time. It
// stops at the first error, which it yields. The paging is by position, so
// entries recorded during the walk are not yielded and none is yielded
// twice.
func (c *Client) AuditEntries(ctx context.Context, q AuditQuery) iter.Seq2[AuditEntry, error] {
	ps := pages(q.Cursor, func(cursor string) (*AuditPage, string, bool, error) {
		q.Cursor = cursor
		p, err := c.Audit(ctx, q)
		if err != nil {
			return nil, "", false, err
		}
		if p.Cursor == nil || *p.Cursor == "" {
			return p, "", false, nil
		}
		return p, *p.Cursor, true, nil
	})
	return items(ps, func(p *AuditPage) []AuditEntry { return p.Entries })
}
