package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
)

// KeySize is the length of the sealing key: AES-256.
const KeySize = 32

// sealVersion is the first byte of every sealed value, so the format (or
// the key, with a key id) can change later without guessing.
const sealVersion byte = 1

// Errors of sealing.
var (
	// ErrInvalidKey: the provider key is empty or contains characters that
	// cannot go in an HTTP header.
	ErrInvalidKey = errors.New("provider key is empty or malformed")
	// ErrKeySize: the sealing key is not KeySize bytes.
	ErrKeySize = errors.New("byok: sealing key must be 32 bytes")
	// ErrUnseal: a sealed value cannot be opened. It was tampered with,
	// sealed under another key, or sealed for another workspace or provider
	// (a row copied between workspaces). The causes are deliberately not
	// told apart.
	ErrUnseal = errors.New("byok: sealed provider key cannot be opened")
)

// Sealer encrypts provider keys for storage at rest with AES-256-GCM. Each
// seal draws a fresh random 96-bit nonce, and the additional data binds the
// ciphertext to its (workspace id, provider): the metadata store holds only
// sealed bytes, and a sealed value moved to another row does not open.
//
// A Sealer is safe for concurrent use.
type Sealer struct {
	aead cipher.AEAD
}

// NewSealer returns a Sealer for key, which must be KeySize bytes
// (ErrKeySize otherwise). The key is not retained beyond the cipher state.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("%w (got %d)", ErrKeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("byok: sealer: %w", err)
	}
	// The random-nonce GCM prepends a fresh 96-bit nonce to each ciphertext,
	// so no caller can ever reuse one by mistake.
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, fmt.Errorf("byok: sealer: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// Seal encrypts key for (workspaceID, provider). The result is
// version || nonce || ciphertext || tag, what the store keeps of a provider
// key (keys.ProviderKeys and keys.Operator seal before they store).
func (s *Sealer) Seal(workspaceID, provider string, key Secret) ([]byte, error) {
	if key.IsZero() {
		return nil, ErrInvalidKey
	}
	out := make([]byte, 1, 1+s.aead.Overhead()+len(key.Reveal()))
	out[0] = sealVersion
	return s.aead.Seal(out, nil, []byte(key.Reveal()), additionalData(workspaceID, provider)), nil
}

// Open decrypts a value made by Seal for the same (workspaceID, provider).
// Any mismatch or damage is ErrUnseal.
func (s *Sealer) Open(workspaceID, provider string, sealed []byte) (Secret, error) {
	if len(sealed) < 1+s.aead.Overhead() || sealed[0] != sealVersion {
		return Secret{}, ErrUnseal
	}
	plain, err := s.aead.Open(nil, nil, sealed[1:], additionalData(workspaceID, provider))
	if err != nil {
		return Secret{}, ErrUnseal
	}
	return NewSecret(string(plain)), nil
}

// additionalData encodes the binding of a sealed key: a label, the format
// version, then each field with its length first, so ("ab","c") and
// ("a","bc") never encode the same.
func additionalData(workspaceID, provider string) []byte {
	ad := make([]byte, 0, 32+len(workspaceID)+len(provider))
	ad = append(ad, "gateway byok key"...)
	ad = append(ad, 0, sealVersion)
	ad = binary.AppendUvarint(ad, uint64(len(workspaceID)))
	ad = append(ad, workspaceID...)
	ad = binary.AppendUvarint(ad, uint64(len(provider)))
	ad = append(ad, provider...)
	return ad
}
