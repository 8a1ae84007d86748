package console

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// Cookie names. The session cookie holds the API key sealed; the form
// cookie holds the token of the forms shown before there is a session
// (sign-in, first run).
const (
	sessionCookie = "console_session"
	formCookie    = "console_form"
	cookiePath    = "/console/"
)

// session is what the sealed cookie carries. The API key is the session's
// whole authority: every page calls the API with it, so the API decides
// on every load whether the key still works (revoked, disabled, expired,
// deleted: 401, and the session ends).
type session struct {
	// ID names the session in the record of sign-outs.
	ID      string `json:"i"`
	Key     string `json:"k"`
	Expires int64  `json:"e"` // Unix seconds
	// CSRF is the token every state-changing form of this session must
	// carry; it lives only in the sealed cookie and in the pages.
	CSRF string `json:"c"`
	// Hash and User are the key's public id and its user, as the API
	// answered at sign-in: the actor of the session's sign-out, which is
	// recorded without asking the API again (the key may no longer work).
	Hash string `json:"h,omitempty"`
	User string `json:"u,omitempty"`
}

// sealer seals sessions with AES-256-GCM under a key derived from the
// gateway's sealing key, so every replica given the same sealing key
// accepts every other replica's cookies, and nothing of the session is
// stored server-side.
type sealer struct {
	aead cipher.AEAD
	now  func() time.Time
}

// sessionAAD binds a sealed value to its use: a value sealed for something
// else under the same key does not open as a session.
var sessionAAD = []byte("gateway console session v1")

// DeriveSessionKey derives the console's session key from the gateway's
// sealing key with HKDF under its own label, so the sealing key itself is
// never used for two purposes.
func DeriveSessionKey(sealingKey []byte) ([]byte, error) {
	return hkdf.Key(sha256.New, sealingKey, nil, "gateway console session v1", 32)
}

func newSealer(key []byte) (*sealer, error) {
	if len(key) != 32 {
		return nil, errors.New("console: the session key must be 32 bytes")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sealer{aead: aead, now: time.Now}, nil
}

// seal returns s sealed as a cookie value.
func (c *sealer) seal(s session) (string, error) {
	plain, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	return c.sealValue(plain, sessionAAD)
}

// sealValue seals plain for the use aad names, as base64url text.
func (c *sealer) sealValue(plain, aad []byte) (string, error) {
	nonce := make([]byte, c.aead.NonceSize(), c.aead.NonceSize()+len(plain)+c.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(c.aead.Seal(nonce, nonce, plain, aad)), nil
}

// errNoSession: no cookie, or one that does not open or has expired.
var errNoSession = errors.New("console: no valid session")

// openValue opens what sealValue sealed for aad.
func (c *sealer) openValue(value string, aad []byte) ([]byte, error) {
	raw, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(raw) < c.aead.NonceSize() {
		return nil, errNoSession
	}
	plain, err := c.aead.Open(nil, raw[:c.aead.NonceSize()], raw[c.aead.NonceSize():], aad)
	if err != nil {
		return nil, errNoSession
	}
	return plain, nil
}

// open returns the session sealed in value, if it opens and has not expired.
func (c *sealer) open(value string) (session, error) {
	plain, err := c.openValue(value, sessionAAD)
	if err != nil {
		return session{}, err
	}
	var s session
	if err := json.Unmarshal(plain, &s); err != nil || s.ID == "" || s.Key == "" || s.CSRF == "" {
		return session{}, errNoSession
	}
	if c.now().Unix() >= s.Expires {
		return session{}, errNoSession
	}
	return s, nil
}

// newToken is a random token for forms.
func newToken() string { return rand.Text() }

// sameToken compares two tokens in constant time; empty never matches.
func sameToken(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// cookies writes and clears the console's cookies. Secure is set when the
// browser reached us over TLS, directly or (as a trusted proxy says with
// X-Forwarded-Proto) through a proxy that terminated it.
type cookies struct {
	trusted []netip.Prefix
}

func (c cookies) secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil || !trustedAddr(peer.Addr().Unmap(), c.trusted) {
		return false
	}
	proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	return strings.EqualFold(strings.TrimSpace(proto), "https")
}

func trustedAddr(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// set writes a cookie of the console: HttpOnly (no page script reads it),
// SameSite=Strict (no other site's page sends it), scoped to /console/.
// maxAge 0 is a cookie of the browser session.
func (c cookies) set(w http.ResponseWriter, r *http.Request, name, value string, maxAge time.Duration) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: value, Path: cookiePath, MaxAge: int(maxAge / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.secure(r),
	})
}

func (c cookies) clear(w http.ResponseWriter, r *http.Request, name string) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: "", Path: cookiePath, MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.secure(r),
	})
}
