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

];
