// agent-controller eval: the hook the eval's site puts into a MiniWoB++ task page, right after
// the page's core/core.js and before the page's own script. It only uses what core.js defines
// (Math.seedrandom, core.startEpisode, core.startEpisodeReal, core.endEpisode, core.EP_TIMER,
// core.cover_div, core.hideDisplay, core.EPISODE_MAX_TIME, WOB_RAW_REWARD_GLOBAL,
// WOB_REWARD_REASON) and the page's #query element. What it guarantees:
// - Math.random is seeded with the run's seed, now and again right before the problem is made,
//   so the same seed makes the same problem whatever ran before;
// - the episode has no time limit worth the name (a day): core.EPISODE_MAX_TIME ignores the
//   page's own setting;
// - the reward display beside the task is hidden;
// - the first episode starts at once, without the START cover's click; once it ended, the cover
//   says DONE and starts nothing;
// - the page's query is posted when the episode starts, and the raw reward the page's own code
//   gave once, when the first episode ends (synchronously: recorded before the click returns).
(function () {
  'use strict';
  var me = document.currentScript;
  var seed = me.dataset.seed;
  var episode = me.dataset.episode;
  var DAY_MS = 24 * 3600 * 1000;

  function post(event) {
    event.episode = episode;
    try {
      var x = new XMLHttpRequest();
      x.open('POST', '/ac-miniwob/event', false);
      x.setRequestHeader('Content-Type', 'application/json');
      x.send(JSON.stringify(event));
    } catch (e) {
      // The eval judges a missing record as "no reward"; the page goes on.
    }
  }

  function query() {
    var q = document.getElementById('query');
    return q ? q.textContent.replace(/\s+/g, ' ').trim() : '';
  }

  Math.seedrandom(seed);
  Object.defineProperty(core, 'EPISODE_MAX_TIME', {
    configurable: true,
    get: function () { return DAY_MS; },
    set: function () {}
  });

  var started = false;
  var ended = false;
  var startEpisode = core.startEpisode;
  var startEpisodeReal = core.startEpisodeReal;
  var endEpisode = core.endEpisode;

  core.startEpisode = function () {
    startEpisode.apply(this, arguments);
    // The scoreboard beside the task (last reward, time left) is the harness's, not the task's:
    // MiniWoB's own observation of the page leaves it out too.
    core.hideDisplay();
    if (!started) {
      started = true;
      core.startEpisodeReal();
    } else if (core.cover_div) {
      core.cover_div.onclick = null;
      core.cover_div.textContent = 'DONE';
    }
  };

  core.startEpisodeReal = function () {
    if (ended) {
      return;
    }
    Math.seedrandom(seed);
    startEpisodeReal.apply(this, arguments);
    post({kind: 'start', query: query()});
  };

  core.endEpisode = function () {
    var live = core.EP_TIMER !== null;
    endEpisode.apply(this, arguments);
    if (live && !ended) {
      ended = true;
      var reason = window.WOB_REWARD_REASON;
      post({
        kind: 'end',
        reward: Number(window.WOB_RAW_REWARD_GLOBAL),
        reason: reason === null || reason === undefined ? null : String(reason)
      });
    }
  };
})();
