package main

// The protocol modules in this build; each registers itself.
import (
	_ "wharf/internal/eventhook"
	_ "wharf/internal/notification"
	_ "wharf/internal/protocol/as2"
	_ "wharf/internal/protocol/file"
	_ "wharf/internal/protocol/httppost"
)
