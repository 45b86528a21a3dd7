<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Aws\DynamoDb\Exception\DynamoDbException;
use Closure;

/**
 * One acquire call: a conditional write tagged with the call's attempt id, so a resend of the
 * same call recognises its own earlier write (a lost answer) while another handle or process with
 * the same owner does not. It carries the fencing token (its base is the clock in microseconds
 * when the item has none) and the clock-skew margin (an expired lock is taken over only once
 * `expires_at < now - margin`). A write whose outcome is unknown is sent again once and, if it
 * stays unknown, cleaned up. The Rust core's `core/src/lock/attempt.rs`, without a deadline.
 *
 * The requests are {@see LockRequests}', the reading of their failures {@see AwsFault}'s; the
 * clock (`now`, and the expiry of a ttl) is the store's, Laravel's `currentTime()` and
 * `toTimestamp()`.
 *
 * @internal used by {@see DynamoDbStore::acquireLock()}
 */
final class LockAttempt
{
    /**
     * Writes per acquire call when the lock vanished (freed) or expired between a failed write
     * and the look at its holder; the same bound as the Rust core's acquire.
     */
    private const ACQUIRE_WRITES = 3;

    /**
     * Writes of one acquire call that get no answer before it gives up and cleans up (the first
     * and one resend), and the pause before the resend, in microseconds: the core's, without a
     * deadline.
     */
    private const UNKNOWN_WRITES = 2;
    private const RESEND_PAUSE_US = 50000;

    /**
     * Tries of the acquire write per call when tries are refused before they could land
     * (throttled, or a connection never made), and the backoff between them: 50 ms doubling,
     * at most 1 s, jittered. The core's rule and default (`max_attempts`, 3). The write itself
     * is sent once per try (no SDK retry, no libcurl resend: {@see LockRequests::takeLock()}),
     * so this class sees every try's outcome.
     */
    private const ACQUIRE_TRIES = 3;
    private const REFUSED_PAUSE_US = 50000;
    private const REFUSED_PAUSE_MAX_US = 1000000;

    private LockRequests $requests;

    /** @var Closure(): int  the current Unix time, the store's clock */
    private Closure $now;

    /** @var Closure(mixed): int  the expiry of a ttl in seconds, as Laravel's `add()` computes it */
    private Closure $expiry;

    /** Take over an expired lock only once `expires_at < now - margin` (seconds). */
    private int $margin;

    /**
     * Test seam ({@see DynamoDbStore::useLockIds()}): where attempt ids and fence bases come
     * from; null: a random id per acquire call and the system clock in microseconds.
     *
     * @var callable|null
     */
    private $attemptIds;

    /** @var callable|null */
    private $fenceBases;

    /**
     * In keep-fence mode, the expiry a released item gets (the clean-up then keeps the fence as a
     * release does); null: delete mode.
     *
     * @var Closure(): int|null
     */
    private ?Closure $keepFence;

    /**
     * @param  Closure(): int  $now
     * @param  Closure(mixed): int  $expiry
     */
    public function __construct(
        LockRequests $requests,
        Closure $now,
        Closure $expiry,
        int $margin,
        ?callable $attemptIds = null,
        ?callable $fenceBases = null,
        ?Closure $keepFence = null
    ) {
        $this->requests = $requests;
        $this->now = $now;
        $this->expiry = $expiry;
        $this->margin = $margin;
        $this->attemptIds = $attemptIds;
        $this->fenceBases = $fenceBases;
        $this->keepFence = $keepFence;
    }

    /**
     * Takes lock `$name` for `$owner` ({@see DynamoDbStore::acquireLock()} says the rules).
     *
     * Returns the lease (`expires_at`, `fence`, `recovered`) when the lock is ours: written now,
     * or found carrying this call's own attempt id and not expired (an earlier send of this call
     * landed and its answer was lost: its expiry and fence stand). Null when someone holds it.
     * Tries refused before they could land are retried after a jittered backoff, up to 3 tries;
     * a write that gets no answer is sent again once; if that gets none either (or the tries run
     * out after one that may have landed), this call's write is deleted again and
     * {@see OutcomeUnknownException} says what the clean-up found.
     *
     * @param  string  $name  the lock name as the lock holds it
     * @param  mixed  $owner
     * @param  int  $seconds  passed to Laravel's `toTimestamp()` as its `add()` does
     * @return array{expires_at: int, fence: int|null, recovered: bool}|null
     */
    public function acquire($name, $owner, $seconds): ?array
    {
        $layout = $this->requests->item();
        $stored = $layout->stored($owner);
        $attempt = $this->attemptIds !== null ? (string) ($this->attemptIds)() : self::randomId();
        $unknown = null;
        $failure = null;
        $writes = 0;
        $refused = 0;
        $refusedPause = self::REFUSED_PAUSE_US;
        $expiresAt = 0;
        while (true) {
            $writes++;
            $now = ($this->now)();
            $expiresAt = ($this->expiry)($seconds);
            try {
                $answer = $this->requests->takeLock(
                    $name,
                    $stored,
                    $attempt,
                    $expiresAt,
                    $now - $this->margin,
                    $this->fenceBase()
                );
            } catch (DynamoDbException $e) {
                if (AwsFault::mayHaveCommitted($e)) {
                    // No answer: the write may have landed. Send it again (same attempt id), once.
                    $unknown = $e;
                    if ($writes < self::UNKNOWN_WRITES) {
                        usleep(self::RESEND_PAUSE_US);
                        continue;
                    }
                    break;
                }
                if (AwsFault::refusedBeforeLanding($e) && $refused + 1 < self::ACQUIRE_TRIES) {
                    // Nothing was written: try again after a backoff (the SDK's retry, made here).
                    $refused++;
                    usleep(self::jittered($refusedPause));
                    $refusedPause = min($refusedPause * 2, self::REFUSED_PAUSE_MAX_US);
                    $writes--; // not a write that reached the item
                    continue;
                }
                if ($unknown !== null) {
                    // An earlier try may have landed: clean it up, whatever ended the tries.
                    $failure = $e;
                    break;
                }
                throw LockException::fromAws(
                    $e,
                    'acquire',
                    $this->requests->table(),
                    $layout->tableKey($name),
                    $owner
                );
            }
            if ($answer['written']) {
                return ['expires_at' => $expiresAt, 'fence' => $answer['fence'], 'recovered' => false];
            }
            $old = $answer['old'];
            if ($old !== null) {
                $oldExpiry = $layout->expiryOf($old);
                if (LockItem::attemptOf($old) === $attempt) {
                    if ($oldExpiry !== null && $oldExpiry > ($this->now)()) {
                        // This call's own earlier write landed; its answer was lost.
                        return [
                            'expires_at' => $oldExpiry,
                            'fence' => LockItem::fenceOf($old),
                            'recovered' => true,
                        ];
                    }
                    // Our own write, already expired: not a lease; write again.
                } elseif ($oldExpiry === null || $oldExpiry >= ($this->now)() - $this->margin) {
                    return null; // held (by another owner, or by this owner through another handle)
                }
                // Else it expired past the margin meanwhile (our clock moved on): write again.
            }
            // No item: freed between the write and the read: write again.
            if ($writes >= self::ACQUIRE_WRITES) {
                break;
            }
        }
        if ($unknown === null) {
            return null; // the lock kept changing hands under us
        }
        [$cleanup, $found] = $this->cleanUp($name, $stored, $attempt, $expiresAt);
        $cause = AwsFault::describe($unknown) . ($failure !== null ? '; then: ' . AwsFault::describe($failure) : '');

        throw OutcomeUnknownException::afterCleanUp(
            $failure ?? $unknown,
            $this->requests->table(),
            $layout->tableKey($name),
            $cause,
            $cleanup,
            $found,
            $expiresAt,
            $owner
        );
    }

    /**
     * The clean-up of an acquire whose outcome is unknown: deletes this call's write if it is
     * there ({@see LockRequests::deleteAttempt()}). Returns what it found (an
     * OutcomeUnknownException::CLEANUP_ constant) and the same in words.
     *
     * @param  string  $name
     * @param  array<string, string>  $stored
     * @return array{0: string, 1: string}
     */
    private function cleanUp($name, array $stored, string $attempt, int $expiresAt): array
    {
        try {
            // Keep-fence mode expires the write and keeps its fence, as its release does: a deleted
            // item would let the next acquirer restart the fence from a clock that may be behind.
            $cleaned = $this->keepFence !== null
                ? $this->requests->expireAttempt($name, $stored, $attempt, ($this->keepFence)())
                : $this->requests->deleteAttempt($name, $stored, $attempt);
            if ($cleaned) {
                return [
                    OutcomeUnknownException::CLEANUP_DELETED,
                    'the write had landed and was deleted again: the lock is free',
                ];
            }

            return [
                OutcomeUnknownException::CLEANUP_NOT_FOUND,
                "nothing of this attempt's is there: the write did not land (or was taken over)",
            ];
        } catch (DynamoDbException $e) {
            return [OutcomeUnknownException::CLEANUP_FAILED, sprintf(
                'the clean-up delete failed too (%s): if the write landed, the lock stays until it expires, '
                . 'by %s UTC at the latest',
                AwsFault::describe($e),
                gmdate('Y-m-d H:i:s', $expiresAt)
            )];
        }
    }

    /**
     * Where the fencing token starts when the lock item has none: the test seam's, or the system
     * clock in microseconds since the epoch, exactly (microtime()'s text, no float).
     */
    private function fenceBase(): int
    {
        if ($this->fenceBases !== null) {
            return (int) ($this->fenceBases)();
        }
        [$fraction, $seconds] = explode(' ', microtime());

        return (int) $seconds * 1000000 + (int) substr($fraction, 2, 6);
    }

    /**
     * `$us` less up to half of it at random (the SDK's jittered backoff), in microseconds.
     */
    private static function jittered(int $us): int
    {
        return $us - random_int(0, intdiv($us, 2));
    }

    /**
     * A fresh attempt id: 16 characters of [A-Za-z0-9] from PHP's CSPRNG.
     */
    private static function randomId(): string
    {
        $alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
        $id = '';
        for ($i = 0; $i < 16; $i++) {
            $id .= $alphabet[random_int(0, 61)];
        }

        return $id;
    }
}
