<?php

namespace Ddblock\Laravel\Tests\Laravel\Fixtures;

use Illuminate\Contracts\Queue\ShouldBeUniqueUntilProcessing;

/** laravel/framework tests/Integration/Queue/UniqueJobTest.php's fixture, as upstream has it. */
class UniqueUntilStartTestJob extends UniqueTestJob implements ShouldBeUniqueUntilProcessing
{
    public $tries = 2;

    public $connection = 'database';
}
