package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/aigateway/gateway/cmd/gateway/app"
)

// TestReadmeStartsWithTheTwoCommands: a newcomer reads the README from the
// top, so its first section is the quick start, whose first block is the two
// commands, and the keys its first steps make belong to the user of the
// first-run key, so the console signed in with that key shows them.
func TestReadmeStartsWithTheTwoCommands(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	sections := regexp.MustCompile(`(?m)^## .*$`).FindAllString(readme, -1)
	if len(sections) == 0 || sections[0] != "## Quick start" {
		t.Fatalf("the README's sections are %q, want \"## Quick start\" first", sections)
	}
	at := strings.Index(readme, "## Quick start")
	if n := strings.Count(readme[:at], "\n"); n > 15 {
		t.Errorf("the quick start begins on line %d, want it within the first screen", n+1)
	}
	start := readme[at:]
	start = start[:strings.Index(start, "\n"+sections[1])]

	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(start)
	if block == nil {
		t.Fatal("the quick start has no sh block")
	}
	var commands []string
	for _, line := range strings.Split(strings.TrimSpace(block[1]), "\n") {
		if f := strings.Fields(line); len(f) >= 2 {
			commands = append(commands, f[0]+" "+f[1])
		}
	}
	if strings.Join(commands, "; ") != "make run; make test" {
		t.Errorf("the quick start's first block runs %q, want make run, then make test", commands)
	}

	users := regexp.MustCompile(`--user (\S+)`).FindAllStringSubmatch(start, -1)
	if len(users) == 0 {
		t.Fatal("the quick start makes no key with the CLI")
	}
	for _, u := range users {
		if u[1] != app.FirstRunUser {
			t.Errorf("the quick start makes a key for user %q, want the first-run key's user %q", u[1], app.FirstRunUser)
		}
	}
	if !strings.Contains(start, "> notes.md") {
		t.Error("the quick start uploads notes.md without making it first")
	}
}
