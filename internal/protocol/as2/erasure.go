package as2

import (
	"context"
	"fmt"

	"wharf/internal/module"
	"wharf/internal/persistence"
)

var _ module.MessageEraser = (*Runtime)(nil)

// EraseMessages clears what the module's tables keep of the content of erased messages.
// Of an inbound message that is the file name the partner sent (as2_inbound.file_name);
// everything else is the envelope: AS2 ids, Message-IDs, the algorithms, the MIC and the
// MDN we answered, which a resend of the same Message-ID gets again byte for byte and
// which holds no content but the MIC, a hash. The request's headers and raw body are
// payload stages and go with the other payloads; as2_outbound and as2_refusals keep no
// content.
func (rt *Runtime) EraseMessages(ctx context.Context, tx module.Tx, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	in, args := module.IDList(ids)
	if _, err := tx.Exec(ctx, `UPDATE as2_inbound SET file_name = ? WHERE message_id IN `+in,
		append([]any{string(persistence.ErasedFileName)}, args...)...); err != nil {
		return fmt.Errorf("as2: erase inbound file names: %w", err)
	}
	return nil
}
