package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/aigateway/gateway/policy/keys"
)

// keysList prints a user's keys, every role, disabled ones too: one line
// each, never a secret.
func keysList(ctx context.Context, args []string, e env) error {
	fs, path := newFlags("keys list")
	user := fs.String("user", "", "the id of the user whose keys to list")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !keys.ValidUserID(*user) {
		return errors.New("--user: must be 1 to 128 characters of letters, digits, '-', '_', '.', '@'")
	}
	rt, err := openRuntime(ctx, *path, e)
	if err != nil {
		return err
	}
	defer rt.Close()
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tROLE\tNAME\tLABEL\tWORKSPACE\tSTATE\tCREATED")
	for k, err := range rt.Keys().Keys(ctx, *user) {
		if err != nil {
			return err
		}
		state := "enabled"
		switch {
		case k.Disabled:
			state = "disabled"
		case k.Expired(time.Now()):
			state = "expired"
		}
		fmt.Fprintf(tw, "%s\t%s\t%q\t%s\t%s\t%s\t%s\n", k.ID, k.Role, k.Name, k.Label,
			orDash(k.WorkspaceID), state, k.CreatedAt.Format(time.RFC3339))
	}
	return tw.Flush()
}

// keysChange disables, enables or deletes a key of any role by id. The
// change is logged for the replicas' revokers, so every replica refuses a
// disabled or deleted key within seconds.
func keysChange(ctx context.Context, verb string, args []string, e env) error {
	fs, path := newFlags("keys " + verb)
	id := fs.String("id", "", "the public id of the key (the part after sk-gw- and before the dot)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if _, ok := keys.ParseID(*id); !ok {
		return errors.New("--id: must be the key's public id, 16 hexadecimal characters (the part of the key between sk-gw- and the dot)")
	}
	rt, err := openRuntime(ctx, *path, e)
	if err != nil {
		return err
	}
	defer rt.Close()
	ctx = asCommand(ctx, "keys "+verb, "")
	switch verb {
	case "delete":
		err = rt.Keys().Delete(ctx, *id)
	default:
		err = rt.Keys().SetDisabled(ctx, *id, verb == "disable")
	}
	if errors.Is(err, keys.ErrKeyNotFound) {
		return fmt.Errorf("no key with id %s", *id)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "key %s %sd\n", *id, verb)
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
