// Package audit is the record of management actions: who changed what,
// when, through which route or command, from where. Every change a user
// can make to keys, provider keys, workspaces, budgets and limits, and
// every console sign-in and sign-out, leaves one Entry, written by the
// metadata store in the same transaction as the change itself, so a
// change whose entry cannot be written is not made.
//
// The acting side travels in the request's context (WithActor), set once
// where the caller is known: the API's authentication, the console's
// session, the CLI's command. The store reads it back (ActorFrom) when it
// writes the entry; a change made with no actor in its context is
// recorded as the system's.
package audit

import (
	"context"
	"encoding/json"
	"time"
)

// Action names what was done. The set is closed: GET /audit refuses an
// action filter outside it.
type Action string

// The recorded actions.
const (
	KeyCreate Action = "key.create"
	KeyUpdate Action = "key.update"
	// KeyDisable and KeyEnable are updates that switch disabled, recorded
	// under their own name because they are the ones looked for.
	KeyDisable Action = "key.disable"
	KeyEnable  Action = "key.enable"
	KeyDelete  Action = "key.delete"

	ProviderKeyCreate Action = "provider_key.create"
	ProviderKeyUpdate Action = "provider_key.update"
	ProviderKeyDelete Action = "provider_key.delete"

	WorkspaceCreate Action = "workspace.create"
	WorkspaceUpdate Action = "workspace.update"
	WorkspaceDelete Action = "workspace.delete"

	BudgetSet    Action = "budget.set"
	BudgetDelete Action = "budget.delete"

	ConsoleSignIn  Action = "console.sign_in"
	ConsoleSignOut Action = "console.sign_out"
	// FirstRunUse: the console's first-run link made the gateway's first
	// management key.
	FirstRunUse Action = "first_run.use"
)

// Actions lists every Action, in the order the documentation gives them.
var Actions = []Action{
	KeyCreate, KeyUpdate, KeyDisable, KeyEnable, KeyDelete,
	ProviderKeyCreate, ProviderKeyUpdate, ProviderKeyDelete,
	WorkspaceCreate, WorkspaceUpdate, WorkspaceDelete,
	BudgetSet, BudgetDelete,
	ConsoleSignIn, ConsoleSignOut, FirstRunUse,
}

// Valid reports whether a is one of Actions.
func (a Action) Valid() bool {
	for _, known := range Actions {
		if a == known {
			return true
		}
	}
	return false
}

// Actor is the acting side of an entry.
type Actor struct {
	// KeyHash is the public id of the acting key; empty for the CLI,
	// which acts with the operator's access to the database, and for the
	// system.
	KeyHash string
	// UserID is the acting key's user, or the user a CLI command acted
	// for. Entries are shown to this user only.
	UserID string
	// Via is the route template ("PATCH /api/v1/keys/{hash}"), the
	// console's ("console POST /console/sign-in") or the CLI command
	// ("cli keys disable").
	Via string
	// ClientAddr is the client's address as the access log has it; empty
	// for the CLI.
	ClientAddr string
	// RequestID is the request's X-Request-Id; empty for the CLI.
	RequestID string
}

// System is the actor of a change made with no actor in its context, such
// as a default workspace the gateway makes itself.
var System = Actor{Via: "system"}

type actorKey struct{}

// WithActor returns ctx carrying a as the actor of the changes made with it.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom returns the actor ctx carries, or System.
func ActorFrom(ctx context.Context) Actor {
	if a, ok := ctx.Value(actorKey{}).(Actor); ok {
		return a
	}
	return System
}

// Change is one field a change touched, with its value before and after as
// JSON (null: absent). Secrets are never recorded: a changed secret is a
// Change whose Old and New are both null.
type Change struct {
	Field string          `json:"field"`
	Old   json.RawMessage `json:"old"`
	New   json.RawMessage `json:"new"`
}

// Diff returns the Change of field from old to new, or ok false when the
// two encode alike. A nil pointer encodes as null.
func Diff(field string, old, new any) (c Change, ok bool) {
	o, n := encode(old), encode(new)
	if string(o) == string(n) {
		return Change{}, false
	}
	return Change{Field: field, Old: o, New: n}, true
}

// Set returns the Change of a field that had no value before, such as the
// fields of a created key.
func Set(field string, value any) Change {
	return Change{Field: field, Old: null, New: encode(value)}
}

// Secret returns the Change of a secret field: that it changed, never what
// to.
func Secret(field string) Change {
	return Change{Field: field, Old: null, New: null}
}

var null = json.RawMessage("null")

func encode(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		// Only values of the store's own types are recorded; one that
		// cannot be encoded is a programming error, kept visible.
		return json.RawMessage(`"<unencodable>"`)
	}
	return b
}

// Entry is one recorded action.
type Entry struct {
	ID     string
	At     time.Time
	Actor  Actor
	Action Action
	// Target is the id of what was acted on: a key's hash, a provider
	// key's or a workspace's id, a budget's workspace id; for a sign-in,
	// the signed-in key's hash.
	Target  string
	Changes []Change
}
