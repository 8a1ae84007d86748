// Package spend holds the gateway to budgets: usage reports from the
// components that run generations, each key's spending limit and each
// workspace's budgets, the windows they are counted in, and the 402 decision
// made on every request from replica-local state. It speaks no HTTP and no
// SQL; the store sums, the gateway answers.
package spend
