//go:build !linux

package storage

import "errors"

const canSyncFS = false

func syncFS(string) error { return errors.New("syncfs is not available on this system") }
