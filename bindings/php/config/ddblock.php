<?php

return [

    /*
    |--------------------------------------------------------------------------
    | Take over the "dynamodb" cache driver
    |--------------------------------------------------------------------------
    |
    | When true (the default), every cache store with 'driver' => 'dynamodb'
    | is built by ddblock: same config keys, same table items and cache
    | behaviour, but its locks release with one owner-conditioned DeleteItem
    | instead of Laravel's eventually consistent read followed by a delete.
    |
    | Set DDBLOCK_TAKEOVER_DYNAMODB=false to leave the "dynamodb" driver to
    | Laravel; stores with 'driver' => 'ddblock' still use ddblock.
    |
    */

    'takeover_dynamodb' => env('DDBLOCK_TAKEOVER_DYNAMODB', true),

    /*
    |--------------------------------------------------------------------------
    | Clock-skew margin (seconds)
    |--------------------------------------------------------------------------
    |
    | An expired lock is taken over only once its expires_at is more than
    | this many seconds in the past by this server's clock. The default, 0,
    | is Laravel's own rule (expires_at < now) and every ddblock front's, so
    | one table has one takeover rule. Set it above the clock skew you fear
    | on every front alike; `php artisan ddblock:doctor` measures this
    | server's offset to DynamoDB's clock. A whole number, 0 or more.
    |
    */

    'clock_skew_margin' => env('DDBLOCK_CLOCK_SKEW_MARGIN', 0),

    /*
    |--------------------------------------------------------------------------
    | Release mode
    |--------------------------------------------------------------------------
    |
    | How a lock is released. "delete" (the default): one DeleteItem
    | conditioned on the owner; the next acquisition's fencing token starts
    | again from the acquirer's clock in microseconds. "keep-fence": one
    | UpdateItem conditioned on the owner that ends the hold (its expiry set
    | a day in the past, so stock Laravel and every ddblock front read the
    | lock as free) but keeps the item and its ddblock_fence, so the next
    | acquisition's token is the kept one + 1 whatever that acquirer's clock
    | says. Set it alike on every front that takes these locks.
    |
    */

    'release_mode' => env('DDBLOCK_RELEASE_MODE', 'delete'),

];
