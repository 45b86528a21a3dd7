<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Aws\CommandInterface;
use Aws\DynamoDb\DynamoDbClient;
use Aws\DynamoDb\Exception\DynamoDbException;
use Aws\ResultInterface;
use Ddblock\Laravel\Events\LockReleased;

/**
 * The DynamoDB requests of a lock, as the conformance vectors (compat-tests/conformance/v2) specify them.
 *
 * @internal
 */
final class LockRequests
{
    /** A keep-fence release: expired, no owner, no attempt id or wait stamp; the fence stays. */
    private const RELEASE_KEEPING_FENCE = 'SET #expires_at = :expires_at REMOVE #value, #attempt, #since';

    public function __construct(private DynamoDbClient $dynamo, public LockFactory $locks)
    {
    }

    /**
     * One write of an acquire, sent once: `written` with the new fence, or the holder's item in `old`.
     *
     * @param  array<string, string>  $stored
     * @return array{written: bool, fence?: int|null, old?: array<string, mixed>|null}
     */
    public function takeLock(
        string $name,
        array $stored,
        string $attempt,
        int $expiresAt,
        int $cutoff,
        int $fenceBase
    ): array {
        // Sent once: no SDK retry (it reports only its last send) and a fresh connection (libcurl
        // resends a request by itself when a reused connection dies unanswered).
        $result = $this->send(self::onFreshConnection($this->command('UpdateItem', $name, [
            '@retries' => 0,
            'UpdateExpression' => 'SET #value = :owner, #expires_at = :expires_at, #attempt = :attempt, '
                . '#fence = if_not_exists(#fence, :fence_base) + :one',
            'ConditionExpression' => 'attribute_not_exists(#key) OR #expires_at < :now',
            'ExpressionAttributeNames' => $this->names('#key', '#value', '#expires_at', '#attempt', '#fence'),
            'ExpressionAttributeValues' => [
                ':owner' => $stored,
                ':expires_at' => ['N' => (string) $expiresAt],
                ':attempt' => ['S' => $attempt],
                ':fence_base' => ['N' => (string) $fenceBase],
                ':one' => ['N' => '1'],
                ':now' => ['N' => (string) $cutoff],
            ],
            'ReturnValues' => 'UPDATED_NEW',
            'ReturnValuesOnConditionCheckFailure' => 'ALL_OLD',
        ])), $name, null, null, $old);
        if ($result !== null) {
            return ['written' => true, 'fence' => LockFactory::fenceOf($result['Attributes'] ?? [])];
        }

        // dynalite ignores ALL_OLD: one consistent read says who holds it.
        return ['written' => false, 'old' => $old ?? $this->read($name)];
    }

    /**
     * The clean-up of an acquire whose outcome is unknown: delete (or, with `$expiresAt`, expire
     * keeping the fence) that call's write only. False when nothing of that call's is there.
     *
     * @param  array<string, string>  $stored
     */
    public function removeAttempt(string $name, array $stored, string $attempt, ?int $expiresAt): bool
    {
        $args = [
            'ConditionExpression' => '#value = :owner AND #attempt = :attempt',
            'ExpressionAttributeNames' => $this->names('#value', '#attempt'),
            'ExpressionAttributeValues' => [':owner' => $stored, ':attempt' => ['S' => $attempt]],
        ];
        if ($expiresAt !== null) {
            $args['UpdateExpression'] = self::RELEASE_KEEPING_FENCE;
            $args['ExpressionAttributeNames'] = $this->names('#value', '#expires_at', '#attempt', '#since');
            $args['ExpressionAttributeValues'][':expires_at'] = ['N' => (string) $expiresAt];
        }

        $operation = $expiresAt === null ? 'DeleteItem' : 'UpdateItem';

        return $this->send($this->command($operation, $name, $args), $name) !== null;
    }

    /**
     * The release: one request conditioned on the owner, no read before it: a DeleteItem, or with
     * `$expiresAt` (keep-fence mode) an UpdateItem that expires the item and keeps its fence. Its
     * outcome, a LockReleased constant (`released` when it ended our hold), and whether the first
     * send found it: a lock gone or another owner's at the first send was not this release's
     * doing, while a resend (the SDK's retry after a lost answer) may find its first send's work,
     * and answers as any release that finds the lock gone, in both modes. With `$tell`, a refusal
     * that sent no item back is followed by one read that tells `other_owner` from `not_held`.
     * Every answer lost after a send that may have landed: settled by one read (settle()).
     *
     * @param  mixed  $owner
     * @return array{0: string, 1: bool}
     *
     * @throws LockException|OutcomeUnknownException
     */
    public function releaseIfOwner(string $name, $owner, ?int $expiresAt, bool $tell = false): array
    {
        $command = $expiresAt === null
            ? $this->command('DeleteItem', $name, [
                'ConditionExpression' => '#value = :owner',
                'ExpressionAttributeNames' => $this->names('#value'),
                'ExpressionAttributeValues' => [':owner' => $this->locks->stored($owner)],
                'ReturnValuesOnConditionCheckFailure' => 'ALL_OLD',
            ])
            : $this->command('UpdateItem', $name, [
                'UpdateExpression' => self::RELEASE_KEEPING_FENCE,
                'ConditionExpression' => '#value = :owner',
                'ExpressionAttributeNames' => $this->names('#value', '#expires_at', '#attempt', '#since'),
                'ExpressionAttributeValues' => [
                    ':owner' => $this->locks->stored($owner),
                    ':expires_at' => ['N' => (string) $expiresAt],
                ],
                'ReturnValuesOnConditionCheckFailure' => 'ALL_OLD',
            ]);
        // Sent on a fresh connection: libcurl resends a request by itself, unseen by the count
        // below, when a reused connection dies unanswered.
        $command = self::onFreshConnection($command);
        [$sends, $unanswered] = [0, false];
        // The attempt step runs once per send, the SDK's retries included; it sees each send's
        // own failure, which the SDK's last exception would hide behind a later one.
        $command->getHandlerList()->appendAttempt(static function (callable $next) use (&$sends, &$unanswered) {
            return static function (CommandInterface $c, $request = null) use ($next, &$sends, &$unanswered) {
                $sends++;

                return $next($c, $request)->then(null, static function ($e) use (&$unanswered) {
                    $unanswered = $unanswered || ($e instanceof DynamoDbException && AwsFault::mayHaveCommitted($e));
                    throw $e;
                });
            };
        }, 'ddblock-sends');
        try {
            if ($this->send($command, $name, 'release', $owner, $old) !== null) {
                return [LockReleased::RELEASED, true];
            }
        } catch (LockException $e) {
            $last = $e->getPrevious();
            // Settled by a read only after a send that may have landed unanswered, and not when
            // the last send never connected (as the core: that error is the answer).
            if (! $unanswered || ! $last instanceof DynamoDbException || self::neverConnected($last)) {
                throw $e;
            }

            return [$this->settle($name, $owner, $last), false];
        }

        return [$this->notReleased($old ?? ($tell ? $this->read($name, 'release', $owner) : null)), $sends === 1];
    }

    /**
     * A release whose sends may have landed, every answer lost: one consistent read tells. Not
     * ours: released (by a lost send, or gone anyway). Ours: it did not land, a LockException
     * with `$last`, the release's last error, says so and when the lock frees itself. The read
     * failing too: OutcomeUnknownException.
     *
     * @param  mixed  $owner
     */
    private function settle(string $name, $owner, DynamoDbException $last): string
    {
        $key = $this->locks->tableKey($name);
        try {
            $item = $this->read($name);
        } catch (DynamoDbException $read) {
            $table = $this->locks->table;
            throw OutcomeUnknownException::ofRelease($last, $table, $key, AwsFault::describe($read), $owner);
        }
        if ($item === null || ! $this->locks->carries($item, $this->locks->stored($owner))) {
            return LockReleased::RELEASED;
        }
        $expiry = $this->locks->expiryOf($item);
        throw LockException::fromAws($last, 'release', $this->locks->table, $key, $owner, sprintf(
            'a consistent read then found the lock still ours: the release did not land, and the lock '
                . 'frees itself at its expiry%s unless released again',
            $expiry === null ? '' : " (Unix time $expiry)"
        ));
    }

    /** Whether `$e` is a connection never made: nothing of that send reached the server. */
    private static function neverConnected(DynamoDbException $e): bool
    {
        return $e->getAwsErrorCode() === null && AwsFault::refusedBeforeLanding($e);
    }

    /**
     * Why a release changed nothing, as the core's release says it: `other_owner` when `$old`, the
     * lock's item (sent back with the refusal, else read after it: dynalite ignores ALL_OLD; null
     * when absent or not read), is live, else `not_held`.
     *
     * @param  array<string, mixed>|null  $old
     */
    private function notReleased(?array $old): string
    {
        $expiry = $old === null ? null : $this->locks->expiryOf($old);

        return $old !== null && ($expiry === null || $this->locks->now() < $expiry)
            ? LockReleased::OTHER_OWNER : LockReleased::NOT_HELD;
    }

    /**
     * forceRelease(): one unconditional DeleteItem (asking for the old item) or, with `$expiresAt`,
     * the keep-fence update of an existing item. True when there was a lock item.
     */
    public function forceRelease(string $name, ?int $expiresAt): bool
    {
        if ($expiresAt === null) {
            $result = $this->send(
                $this->command('DeleteItem', $name, ['ReturnValues' => 'ALL_OLD']),
                $name,
                'force-release'
            );

            return ($result['Attributes'] ?? []) !== [];
        }

        return $this->send($this->command('UpdateItem', $name, [
            'UpdateExpression' => self::RELEASE_KEEPING_FENCE,
            'ConditionExpression' => 'attribute_exists(#key)',
            'ExpressionAttributeNames' => $this->names('#key', '#value', '#expires_at', '#attempt', '#since'),
            'ExpressionAttributeValues' => [':expires_at' => ['N' => (string) $expiresAt]],
        ]), $name, 'force-release') !== null;
    }

    /**
     * Laravel 12.63+'s refresh(): the owner's live lock extended to `$expiresAt`.
     *
     * @param  mixed  $owner
     */
    public function refreshIfOwner(string $name, $owner, int $now, int $expiresAt): bool
    {
        return $this->send($this->command('UpdateItem', $name, [
            'ConditionExpression' => 'attribute_exists(#key) AND #value = :owner AND #expires_at > :now',
            'UpdateExpression' => 'SET #expires_at = :expires_at',
            'ExpressionAttributeNames' => $this->names('#key', '#value', '#expires_at'),
            'ExpressionAttributeValues' => [
                ':owner' => $this->locks->stored($owner),
                ':now' => ['N' => (string) $now],
                ':expires_at' => ['N' => (string) $expiresAt],
            ],
        ]), $name, 'refresh', $owner) !== null;
    }

    /**
     * One consistent GetItem of lock `$name`; with `$action`, failures become a LockException.
     *
     * @param  mixed  $owner  kept out of error messages
     * @return array<string, mixed>|null
     */
    public function read(string $name, ?string $action = null, $owner = null): ?array
    {
        $result = $this->send($this->command('GetItem', $name, ['ConsistentRead' => true]), $name, $action, $owner);
        $item = $result['Item'] ?? null;

        return is_array($item) && $item !== [] ? $item : null;
    }

    /**
     * Sends `$command`: its result, or null when its condition failed (`$old`: the item sent back
     * with the failure, ALL_OLD). Any other failure throws, as a LockException with `$action`.
     *
     * @param  mixed  $owner  kept out of error messages
     * @param  array<string, mixed>|null  $old
     */
    private function send(
        CommandInterface $command,
        string $name,
        ?string $action = null,
        $owner = null,
        ?array &$old = null
    ): ?ResultInterface {
        try {
            return $this->dynamo->execute($command);
        } catch (DynamoDbException $e) {
            if ($e->getAwsErrorCode() !== 'ConditionalCheckFailedException') {
                $key = $this->locks->tableKey($name);
                throw $action === null ? $e : LockException::fromAws($e, $action, $this->locks->table, $key, $owner);
            }
            $item = $e->get('Item');
            $old = is_array($item) && $item !== [] ? $item : null;

            return null;
        }
    }

    /** @param  array<string, mixed>  $args */
    private function command(string $operation, string $name, array $args): CommandInterface
    {
        $args = ['TableName' => $this->locks->table, 'Key' => $this->locks->key($name)] + $args;

        return $this->dynamo->getCommand($operation, $args);
    }

    private static function onFreshConnection(CommandInterface $command): CommandInterface
    {
        if (defined('CURLOPT_FRESH_CONNECT')) {
            $http = $command['@http'] ?? [];
            $http['curl'] = array_replace($http['curl'] ?? [], [CURLOPT_FRESH_CONNECT => true]);
            $command['@http'] = $http;
        }

        return $command;
    }

    /** @return array<string, string> */
    private function names(string ...$placeholders): array
    {
        return array_intersect_key([
            '#key' => $this->locks->keyAttribute,
            '#value' => $this->locks->valueAttribute,
            '#expires_at' => $this->locks->expirationAttribute,
            '#attempt' => LockFactory::ATTEMPT_ATTRIBUTE,
            '#fence' => LockFactory::FENCE_ATTRIBUTE,
            '#since' => LockFactory::SINCE_ATTRIBUTE,
        ], array_flip($placeholders));
    }
}
