package keys

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aigateway/gateway/internal/money"
)

// Role says what a key may do.
type Role string

const (
	// RoleManagement keys act on their user's account: they create and read
	// workspaces, and may also call the per-workspace operations.
	RoleManagement Role = "management"
	// RoleStandard keys belong to one workspace and call model lookup and
	// file upload.
	RoleStandard Role = "standard"
	// RoleService keys are for the other gateway components, which must
	// read a file to use it in a request: they look up models and list and
	// read (metadata and content) the files of every workspace of their
	// user, whatever files.downloadable says, and do nothing else.
	RoleService Role = "service"
)

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return r == RoleManagement || r == RoleStandard || r == RoleService }

// KeyPrefix starts every secret key, so leaked keys can be found by secret
// scanners. The full format is "sk-gw-<id>.<secret>": id is the public key id
// (it appears in logs and lets the store find the row without the secret),
// secret is 32 random bytes in unpadded base64url.
const KeyPrefix = "sk-gw-"

const (
	keyIDBytes     = 8  // 16 hex characters of public id
	keySecretBytes = 32 // 43 base64url characters of secret
	// MaxTokenLength bounds what the authenticator will even hash.
	MaxTokenLength = 128
)

// Errors of the key store and the authenticator.
var (
	// ErrKeyNotFound is returned by a KeyStore for an unknown key id.
	ErrKeyNotFound = errors.New("api key not found")
	// ErrUnauthenticated means no credentials were presented.
	ErrUnauthenticated = errors.New("missing authentication")
	// ErrInvalidKey means credentials were presented but do not name an
	// enabled key. Unknown, malformed and disabled keys are deliberately not
	// told apart, so the answer gives an attacker nothing to probe.
	ErrInvalidKey = errors.New("invalid api key")
	// ErrForbidden means the key is valid but lacks the role or scope.
	ErrForbidden = errors.New("forbidden")
	// ErrReadOnlyKey: a service key asked to change something; service keys
	// only look up models and read files. It is an ErrForbidden.
	ErrReadOnlyKey = fmt.Errorf("%w: service keys only read", ErrForbidden)
	// ErrModelNotAllowed means the key's model allowlist excludes the model.
	ErrModelNotAllowed = errors.New("model not allowed for this key")
)

// APIKey is the stored form of a key. The secret itself is never stored:
// only its SHA-256, compared in constant time.
type APIKey struct {
	ID     string // public id, safe to log
	UserID string
	Name   string
	Role   Role
	// WorkspaceID is the workspace a standard key belongs to; empty means the
	// user's default workspace.
	WorkspaceID string
	// Models is the allowlist of model ids the key may look up; nil allows all.
	Models    []string
	Hash      [sha256.Size]byte
	Disabled  bool
	CreatedAt time.Time

	// Label is a masked form a person can recognise: the prefix, the
	// id's first characters and the secret's last four.
	Label string
	// ExpiresAt: from then on the key authenticates nothing; nil: never.
	ExpiresAt *time.Time
	// UpdatedAt is the time of the last change; nil until the first.
	UpdatedAt *time.Time
	// CreatorUserID is the user who created the key.
	CreatorUserID string
	// Limit is the key's spending limit; nil: none.
	Limit *money.Micros
	// LimitReset is the window of Limit; ResetNever: lifetime.
	LimitReset Reset
	// IncludeBYOKInLimit: usage served with a provider key of the user's
	// own counts toward Limit.
	IncludeBYOKInLimit bool
}

// Expired reports whether the key's expiry has come at now.
func (k *APIKey) Expired(now time.Time) bool {
	return k.ExpiresAt != nil && !now.Before(*k.ExpiresAt)
}

// Reset is the window of a spending limit; windows start at 00:00 UTC, weeks
// on Monday.
type Reset string

// Windows of a limit.
const (
	ResetNever   Reset = ""
	ResetDaily   Reset = "daily"
	ResetWeekly  Reset = "weekly"
	ResetMonthly Reset = "monthly"
)

// Valid reports whether r is a known window.
func (r Reset) Valid() bool {
	return r == ResetNever || r == ResetDaily || r == ResetWeekly || r == ResetMonthly
}

// KeyStore persists users and keys. Implementations are safe for concurrent use.
type KeyStore interface {
	// EnsureUser records userID if it is new; it is idempotent.
	EnsureUser(ctx context.Context, userID string) error
	// CreateKey stores k; k.UserID must exist.
	CreateKey(ctx context.Context, k APIKey) error
	// KeyByID returns the key with the public id, or ErrKeyNotFound.
	KeyByID(ctx context.Context, id string) (APIKey, error)
}

// NewKey makes a fresh key: the secret token to show once, and the APIKey to
// store (ID and Hash set; the caller fills in the rest).
func NewKey() (token string, k APIKey, err error) {
	var id [keyIDBytes]byte
	var secret [keySecretBytes]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", APIKey{}, err
	}
	if _, err := rand.Read(secret[:]); err != nil {
		return "", APIKey{}, err
	}
	k.ID = hex.EncodeToString(id[:])
	token = KeyPrefix + k.ID + "." + base64.RawURLEncoding.EncodeToString(secret[:])
	k.Hash = sha256.Sum256([]byte(token))
	k.Label = label(k.ID, token)
	return token, k, nil
}

// label masks a secret: the prefix, four characters of the public id and
// the last four of the token, enough for a person to tell keys apart.
func label(id, token string) string {
	return KeyPrefix + id[:4] + "..." + token[len(token)-4:]
}

// ParseToken extracts the public key id from a token, checking only its shape.
func ParseToken(token string) (id string, ok bool) {
	if len(token) > MaxTokenLength || !strings.HasPrefix(token, KeyPrefix) {
		return "", false
	}
	rest := token[len(KeyPrefix):]
	id, secret, found := strings.Cut(rest, ".")
	if !found || len(secret) != base64.RawURLEncoding.EncodedLen(keySecretBytes) {
		return "", false
	}
	return ParseID(id)
}

// ParseID checks the shape of a public key id (as a path names it): 16
// lowercase hexadecimal characters. Anything else names no key.
func ParseID(id string) (string, bool) {
	if len(id) != 2*keyIDBytes {
		return "", false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", false
		}
	}
	return id, true
}

// Matches reports whether token is the secret of k, in constant time.
func (k *APIKey) Matches(token string) bool {
	sum := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(sum[:], k.Hash[:]) == 1
}

// AllowsModel reports whether the key's allowlist admits the model id.
func (k *APIKey) AllowsModel(id string) bool {
	if k.Models == nil {
		return true
	}
	for _, m := range k.Models {
		if m == id {
			return true
		}
	}
	return false
}
